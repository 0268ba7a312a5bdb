"""Build the plain-words retrieval dataset (plain-words) from pinned Debian manuals.

    python bench/build_eval_plainwords.py [--cache DIR] [--out DIR] [--questions FILE]

Questions asked the way people ask them, in plain words, over real manuals: the
question paraphrases its answer and does not repeat the rare term that would give
the passage away ("which kind of value can't this library handle?", not "REAL").
The questions are written by hand in ``bench/plain_words_questions.jsonl``, one per
line, each naming its document and its answer (one or two sentences copied from
the document as ragsage parses it).

The builder downloads the exact ``-doc`` package versions pinned in ``SOURCES``
with ``apt-get download`` into ``--cache``, checks each archive's SHA-256,
unpacks it with ``dpkg-deb -x`` (nothing is installed), copies the chosen manuals
byte for byte to ``<out>/documents/<package>/<path>``, checks every answer (its
words must occur contiguously in its document's parsed text, and nowhere else in
the set) and writes the QA-span layout read by ``ragsage eval``
(docs/evaluation-dataset.md, section "plain-words"). It prints, per manual and
overall, how much of each question's wording its answer shares. The data is never
committed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

# Run as a script, this folder is on sys.path: its sibling modules import directly.
from pinned_packages import Pin, fetch, sha256_of, unpack

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.text import content_words, words
from ragsage.core.types import Document as StoredDocument
from ragsage.core.types import ParsedDocument, RawSource
from ragsage.evaluation.writing import (
    QAQuestion,
    question_line,
    split_of,
    word_overlap,
    write_dataset_folder,
)
from ragsage.ingestion import IngestionConfig

DEFAULT_CACHE = Path(".ragsage/cache/plain-words")
DEFAULT_OUT = Path(".ragsage/eval/plain-words")
DEFAULT_QUESTIONS = Path(__file__).resolve().parent / "plain_words_questions.jsonl"
BUILDER = "bench/build_eval_plainwords.py"
NAME = "plain-words"
FAMILY = "plain-words"
# A word is rare when at most this share of the set's chunks holds it.
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


def rare_words(
    text: str, frequency: Mapping[str, int], chunks: int, share: float = RARE_SHARE
) -> set[str]:
    """The content words of ``text`` that at most ``share`` of ``chunks`` chunks hold."""
    limit = share * chunks
    return {word for word in content_words(text) if frequency.get(word, 0) <= limit}


def rare_share(
    answer: str, frequency: Mapping[str, int], chunks: int, share: float = RARE_SHARE
) -> float | None:
    """Share of the answer's distinct content words that are rare in the set."""
    distinct = set(content_words(answer))
    if not distinct:
        return None
    return len(rare_words(answer, frequency, chunks, share)) / len(distinct)


def giveaways(
    item: Item, frequency: Mapping[str, int], chunks: int, share: float = RARE_SHARE
) -> set[str]:
    """Rare answer words the question repeats: the words that would give the passage away."""
    return rare_words(item.question, frequency, chunks, share) & set(words(item.answer))


def default_chunks(backend: HeuristicBackend, path: str, parsed: ParsedDocument) -> list[str]:
    """A document's chunk texts at ragsage's default size and overlap."""
    config = IngestionConfig()
    stored = StoredDocument(id=path, content_hash=path, title="", source=path)
    made = backend.chunk(stored, parsed.pages, size=config.chunk_size, overlap=config.chunk_overlap)
    return [chunk.text for chunk in made]


def document_frequency(chunks: Iterable[str]) -> Counter[str]:
    """In how many chunks each word occurs."""
    frequency: Counter[str] = Counter()
    for text in chunks:
        frequency.update(set(words(text)))
    return frequency


def _mean(values: Iterable[float | None]) -> float:
    present = [value for value in values if value is not None]
    return mean(present) if present else 0.0


def report(
    items: Sequence[Item],
    kinds: Mapping[str, str],
    chunks: Mapping[str, list[str]],
    frequency: Mapping[str, int],
) -> list[str]:
    """Per manual and overall: documents, chunks, questions per split, answer size, overlaps."""
    total = sum(len(made) for made in chunks.values())
    header = (
        f"{'kind':<17}{'docs':>5}{'chunks':>7}{'questions':>10}{'dev':>5}{'test':>5}"
        f"{'words':>7}{'in-chunk':>9}{'overlap':>9}{'rare':>6}"
    )
    table = [header, "-" * len(header)]
    for kind in (*KIND_ORDER, "all"):
        paths = [path for path, own in kinds.items() if kind in {"all", own}]
        chosen = [item for item in items if item.document in paths]
        if not chosen:
            continue
        splits = Counter(split_of(item.id) for item in chosen)
        inside = sum(
            any(span_count(i.answer, joined(words(text))) for text in chunks[i.document])
            for i in chosen
        )
        table.append(
            f"{kind:<17}{len(paths):>5}{sum(len(chunks[p]) for p in paths):>7}"
            f"{len(chosen):>10}{splits['dev']:>5}{splits['test']:>5}"
            f"{mean(len(words(i.answer)) for i in chosen):>7.1f}{inside:>9}"
            f"{_mean(word_overlap(i.question, i.answer) for i in chosen):>9.2f}"
            f"{_mean(rare_share(i.answer, frequency, total) for i in chosen):>6.2f}"
        )
    return table


# ---------------------------------------------------------------- building


def write_dataset(
    out: Path, documents: Sequence[Document], items: Sequence[Item], meta: dict[str, Any]
) -> int:
    """Replace ``out`` with the dataset; the number of bytes written."""
    kinds = {document.path: document.source.kind for document in documents}
    lines = [
        question_line(
            QAQuestion(item.id, item.question, item.document, item.answer, kinds[item.document]),
            family=FAMILY,
        )
        for item in sorted(items, key=lambda item: item.id)
    ]
    return write_dataset_folder(out, ((d.path, d.content) for d in documents), meta, lines)


def metadata(
    documents: Sequence[Document], archives: Mapping[str, str], questions: bytes, count: int
) -> dict[str, Any]:
    """dataset.json: what the set is and exactly which inputs it was built from."""
    return {
        "name": NAME,
        "format": "qa-spans",
        "description": (
            f"{count} hand-written questions in plain words over {len(documents)} manuals from "
            f"{len(SOURCES)} pinned Debian -doc packages; each answer is one or two sentences "
            "of its manual, which the question paraphrases without its rare terms; split "
            "dev/test by SHA-1 of the id"
        ),
        "source": "pinned Debian packages, listed under sources",
        "builder": BUILDER,
        "sources": [
            {
                "package": s.package,
                "version": s.version,
                "archive": archives[s.package],
                "sha256": s.sha256,
                "licence": s.licence,
                "kind": s.kind,
                "files": list(s.files),
            }
            for s in SOURCES
        ],
        "documents": {
            d.path: sha256_of(d.content) for d in sorted(documents, key=lambda d: d.path)
        },
        "questions": "bench/plain_words_questions.jsonl",
        "questions_sha256": sha256_of(questions),
    }


def build(args: argparse.Namespace) -> int:
    """Fetch the manuals, check every answer, write the dataset, print a summary."""
    started = time.monotonic()
    questions_path: Path = args.questions
    items = read_questions(questions_path)
    documents, archives = gather(args.cache)
    backend = HeuristicBackend()
    parsed = {d.path: backend.parse(RawSource(d.content, Path(d.path).name)) for d in documents}
    texts = {path: parsed_text(document) for path, document in parsed.items()}
    if problems := verify(items, texts):
        raise SystemExit(
            "error: questions that do not fit the documents:\n  " + "\n  ".join(problems)
        )
    chunks = {path: default_chunks(backend, path, document) for path, document in parsed.items()}
    frequency = document_frequency(text for made in chunks.values() for text in made)
    total = sum(len(made) for made in chunks.values())
    for item in items:
        if given := giveaways(item, frequency, total):
            print(f"warning: {item.id} repeats rare answer words: {sorted(given)}", file=sys.stderr)
        if len(words(item.answer)) > LONG_ANSWER_WORDS:
            print(f"warning: {item.id} has a long answer", file=sys.stderr)
    meta = metadata(documents, archives, questions_path.read_bytes(), len(items))
    size = write_dataset(args.out, documents, items, meta)
    kinds = {document.path: document.source.kind for document in documents}
    formats = Counter(Path(document.path).suffix.lstrip(".").upper() for document in documents)
    print(
        f"packages: {len(SOURCES)}  documents: {len(documents)} "
        f"({', '.join(f'{n} {fmt}' for fmt, n in sorted(formats.items()))})  "
        f"chunks at default size: {total}"
    )
    print(
        f"questions: {len(items)}, every answer found once in its document and nowhere else; "
        "overlap = share of the question's content words in the answer; rare = share of the "
        f"answer's content words in at most {RARE_SHARE:.0%} of the chunks"
    )
    print("\n".join(report(items, kinds, chunks, frequency)))
    print(f"wrote {args.out} ({size:,} bytes) in {time.monotonic() - started:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"where archives are downloaded and unpacked (default {DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"dataset directory, replaced (default {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--questions",
        type=Path,
        default=DEFAULT_QUESTIONS,
        help="the hand-written questions (default bench/plain_words_questions.jsonl)",
    )
    return build(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
