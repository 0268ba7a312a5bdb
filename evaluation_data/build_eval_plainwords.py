"""Build the plain-words retrieval dataset (plain-words) from pinned Debian manuals.

    python -m evaluation_data plainwords [--cache DIR] [--out DIR] [--questions FILE]

Questions asked the way people ask them, in plain words, over real manuals: the
question paraphrases its answer and does not repeat the rare term that would give
the passage away ("which kind of value can't this library handle?", not "REAL").
The questions are written by hand in ``plain_words_questions.jsonl`` beside this
module, one per line, each naming its document and its answer (one or two
sentences copied from the document as ragsage parses it).

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
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from evaluation_data.builder_cli import builder_parser
from evaluation_data.pinned_packages import sha256_of
from evaluation_data.plainwords_corpus import (
    KIND_ORDER,
    LONG_ANSWER_WORDS,
    RARE_SHARE,
    SOURCES,
    Document,
    Item,
    gather,
    joined,
    parsed_text,
    read_questions,
    span_count,
    verify,
)
from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import Document as StoredDocument
from ragsage.core.documents import RawSource
from ragsage.core.pages import ParsedDocument
from ragsage.core.text import content_words, words
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
BUILDER = "python -m evaluation_data plainwords"
NAME = "plain-words"
FAMILY = "plain-words"


# A word is rare when at most this share of the set's chunks holds it.
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
        "questions": "evaluation_data/plain_words_questions.jsonl",
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
    parser = builder_parser("plainwords", __doc__, out=DEFAULT_OUT, cache=DEFAULT_CACHE)
    parser.add_argument(
        "--questions",
        type=Path,
        default=DEFAULT_QUESTIONS,
        help="the hand-written questions (default evaluation_data/plain_words_questions.jsonl)",
    )
    return build(parser.parse_args(argv))
