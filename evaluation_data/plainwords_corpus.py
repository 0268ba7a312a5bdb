"""The plain-words corpus: its pinned sources, its documents, the questions checked on them."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluation_data.pinned_packages import Pin, fetch, unpack
from ragsage.core.pages import ParsedDocument
from ragsage.core.text import words

RARE_SHARE = 0.05
# Answers are one or two sentences; longer ones are reported.
LONG_ANSWER_WORDS = 45
# Passages that must never be an answer here: a separate test pins the question
# about them, and they must not be in the data retrieval is tuned on.
HELD_OUT = ("This version doesn’t handle the REAL type.",)
HELD_OUT_NGRAM = 4
FIELDS = ("id", "question", "document", "answer")


@dataclass(frozen=True, slots=True)
class Source:
    """One pinned Debian package and the manuals taken from it.

    ``root`` is the folder inside the unpacked package that ``files`` (and the
    document paths, after ``<package>/``) are relative to; ``kind`` is the
    manual's short name, the ``kind`` of its questions.
    """

    package: str
    version: str
    sha256: str
    licence: str
    kind: str
    root: str
    files: tuple[str, ...]


# Every input, pinned: the archive's exact version and SHA-256. Versions are those
# of Debian 12's point release (the security archive keeps only its newest build).
# shared-mime-info is an architecture-dependent package: the pin is its amd64 build.
# fmt: off
SOURCES: tuple[Source, ...] = (
    Source("libtasn1-doc", "4.19.0-2+deb12u1",
           "ce109d7f7611b24d03e41b831eab01c3c7fb1a55b8d8b4350ed24383c0c8dfda",
           "GFDL-1.3 (no invariant sections)", "libtasn1",
           "usr/share/doc/libtasn1-doc", ("libtasn1.pdf",)),
    Source("shared-mime-info", "2.2-1",
           "dd026add873483566faefebbd8779a1e5e14ab2e44682ebfe238c3828a2b936b",
           "GPL-2+", "shared-mime-info",
           "usr/share/doc/shared-mime-info", ("shared-mime-info-spec.pdf",)),
    Source("python3.11-doc", "3.11.2-6+deb12u8",
           "50eb63e7f636c4281e9ce1b8f10386f1def42159eddce34fc1f41c46261df71b",
           "PSF-2.0", "python", "usr/share/doc/python3.11/html",
           ("howto/logging.html", "howto/logging-cookbook.html",
            "library/logging.handlers.html", "howto/sorting.html", "howto/unicode.html",
            "tutorial/errors.html", "tutorial/venv.html", "tutorial/floatingpoint.html",
            "tutorial/inputoutput.html", "library/sqlite3.html")),
    Source("sqlite3-doc", "3.40.1-2+deb12u2",
           "466e30d7066e2641fa13e56bc662a2ad521b8cc9c17dde9c9dac3d4f105e32f2",
           "public domain", "sqlite", "usr/share/doc/sqlite3",
           ("lang_transaction.html", "isolation.html", "autoinc.html", "lang_vacuum.html",
            "wal.html", "floatingpoint.html", "lockingv3.html", "tempfiles.html",
            "atomiccommit.html", "datatype3.html", "foreignkeys.html")),
    Source("postgresql-doc-15", "15.18-0+deb12u1",
           "3c598277a463c44d672daa2c335deb8d8252e1852fb025fd4578ea2d9a1b90f0",
           "PostgreSQL", "postgresql", "usr/share/doc/postgresql-doc-15/html",
           ("mvcc-intro.html", "transaction-iso.html", "datatype-numeric.html",
            "routine-vacuuming.html", "runtime-config-logging.html")),
    Source("apache2-doc", "2.4.68-1~deb12u1",
           "cee8fe80ffb5de2744cd690c3d795b489e43a1c44c4e3a634c521642f22d7835",
           "Apache-2.0", "apache", "usr/share/doc/apache2-doc/manual/en",
           ("logs.html", "caching.html", "howto/htaccess.html")),
    Source("git-doc", "1:2.39.5-0+deb12u3",
           "3c89668a11053a6bafade3de1f611f4613db31e082af63f43d8c5b69ad8795ec",
           "GPL-2", "git", "usr/share/doc/git-doc",
           ("gittutorial.html", "git-stash.html")),
)
# fmt: on
KIND_ORDER = tuple(dict.fromkeys(source.kind for source in SOURCES))


@dataclass(frozen=True, slots=True)
class Document:
    """One manual copied into the set: its path under ``documents/`` and its bytes."""

    source: Source
    path: str
    content: bytes


@dataclass(frozen=True, slots=True)
class Item:
    """One hand-written line of the questions file."""

    id: str
    question: str
    document: str
    answer: str


# ---------------------------------------------------------------- fetching


def gather(cache: Path) -> tuple[list[Document], dict[str, str]]:
    """Fetch and unpack every pinned package; the chosen manuals and each archive's name."""
    cache = cache.resolve()
    documents: list[Document] = []
    archives: dict[str, str] = {}
    for source in SOURCES:
        pin = Pin("deb", source.package, source.version, source.sha256)
        archive = fetch(pin, cache)
        archives[source.package] = archive.name
        root = unpack(pin, archive, cache) / source.root
        for name in source.files:
            path = root / name
            if not path.is_file():
                raise SystemExit(f"error: {source.package} {source.version} has no {name}")
            documents.append(Document(source, f"{source.package}/{name}", path.read_bytes()))
    return documents, archives


# ---------------------------------------------------------------- questions


def read_questions(path: Path) -> list[Item]:
    """The hand-written questions, each line checked for its fields; ids and questions unique."""
    items: list[Item] = []
    problems: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        if sorted(record) != sorted(FIELDS) or not all(
            isinstance(record[key], str) and record[key].strip() for key in FIELDS
        ):
            problems.append(f"line {number}: needs exactly the text fields {', '.join(FIELDS)}")
            continue
        items.append(Item(*(record[key] for key in FIELDS)))
    for label, values in (("id", [i.id for i in items]), ("question", [i.question for i in items])):
        twice = sorted(value for value, count in Counter(values).items() if count > 1)
        problems += [f"{label} used twice: {value}" for value in twice]
    if problems:
        raise SystemExit(f"error: {path}:\n  " + "\n  ".join(problems))
    return items


def joined(tokens: Iterable[str]) -> str:
    """Tokens as one space-padded string, so a contiguous run is a substring."""
    return " " + " ".join(tokens) + " "


def span_count(span: str, text_tokens: str) -> int:
    """How many times ``span``'s words occur contiguously in space-padded ``text_tokens``."""
    needle = words(span)
    return text_tokens.count(joined(needle)) if needle else 0


def parsed_text(parsed: ParsedDocument) -> str:
    """A parsed document's text, page after page."""
    return "\n\n".join(page.text for page in parsed.pages)


def _grams(tokens: Sequence[str], size: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def verify(items: Sequence[Item], texts: Mapping[str, str]) -> list[str]:
    """What is wrong with the questions against the parsed documents (empty when nothing).

    Each answer must occur, word for word, exactly once in its own document and
    nowhere in the others; no answer may touch a held-out passage.
    """
    tokens = {path: joined(words(text)) for path, text in texts.items()}
    held_out = set().union(*(_grams(words(span), HELD_OUT_NGRAM) for span in HELD_OUT))
    problems: list[str] = []
    for item in items:
        if item.document not in tokens:
            problems.append(f"{item.id}: no document {item.document}")
            continue
        found = span_count(item.answer, tokens[item.document])
        if found == 0:
            problems.append(f"{item.id}: answer not in the parsed text of {item.document}")
        elif found > 1:
            problems.append(f"{item.id}: answer occurs {found} times in {item.document}")
        elsewhere = [path for path in tokens if path != item.document]
        if others := [path for path in elsewhere if span_count(item.answer, tokens[path])]:
            problems.append(f"{item.id}: answer also occurs in {', '.join(others)}")
        if _grams(words(item.answer), HELD_OUT_NGRAM) & held_out:
            problems.append(f"{item.id}: answer touches a held-out passage")
    return problems


# ---------------------------------------------------------------- measuring
