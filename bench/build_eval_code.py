"""Build the multi-language source-code retrieval dataset (code) from pinned packages.

    python bench/build_eval_code.py [--cache DIR] [--out DIR] [--files-per-language N]
                                    [--max-bytes N] [--doc-questions N]
                                    [--max-per-document N] [--handwritten FILE] [--seed N]

It downloads the exact package versions pinned in ``SOURCES`` (Debian ``.deb``
files with ``apt-get download``, npm tarballs with ``npm pack``) into ``--cache``,
checks each archive's SHA-256 against the pin, copies a seeded sample of each
language's source files byte for byte to ``<out>/documents/<language>/<package>/``
and writes questions in the QA-span layout read by ``ragsage eval``
(docs/evaluation-dataset.md, section "code"):

* ``doc-comment``: the first sentence of a definition's doc comment (Rust ``///``,
  Javadoc, JSDoc, PHPDoc, Doxygen, Go and C comments, Python docstrings, Ruby and
  shell ``#`` blocks), with markup stripped and the definition's name hidden;
* ``handwritten``: questions written by hand in ``bench/code_questions_handwritten.jsonl``,
  each naming the definition it points at, resolved here to its span.

The answer is the definition's whole span as it stands in the file: its doc
comment and attributes, then its code through its end. Questions carry
``"match": "overlap"``: a chunk answers when the word 8-grams it shares with the
span cover half of the smaller of the two. Definitions are found with tree-sitter
grammars directly, never with ragsage's own code readers, so the data does not
depend on the chunker it judges. The data is never committed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from builder_cli import add_sampling, builder_parser
from code_questions import (
    CodeQuestion,
    Document,
    choose,
    deduplicate,
    doc_comment_questions,
    handwritten_questions,
    read_handwritten,
)
from code_sources import LANGUAGE_ORDER, SOURCES, Source, sample_files, source_files

# Run as a script, this folder is on sys.path: its sibling modules import directly.
from pinned_packages import fetch, sha256_of, unpack

from ragsage.adapters.parsing.tokens import load_encoding
from ragsage.evaluation.writing import (
    QAQuestion,
    positive_int,
    question_line,
    split_of,
    word_overlap,
    write_dataset_folder,
)

DEFAULT_CACHE = Path(".ragsage/cache/code-src")
DEFAULT_OUT = Path(".ragsage/eval/code")
DEFAULT_HANDWRITTEN = Path(__file__).resolve().parent / "code_questions_handwritten.jsonl"
FAMILIES = ("doc-comment", "handwritten")
BUILDER = "bench/build_eval_code.py"


# ---------------------------------------------------------------- building


def _utf8(content: bytes) -> bool:
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def gather(
    cache: Path, max_bytes: int, files_per_language: int, seed: int, forced: set[str]
) -> tuple[list[Document], dict[str, str]]:
    """Fetch every pinned source, sample each language's files; the documents and archive hashes.

    Files named in ``forced`` (those the hand-written questions point at) are always kept.
    """
    cache = cache.resolve()
    archives: dict[str, str] = {}
    documents: list[Document] = []
    for language in LANGUAGE_ORDER:
        candidates: list[tuple[Source, list[str]]] = []
        contents: dict[tuple[str, str], bytes] = {}
        for source in (s for s in SOURCES if s.language == language):
            archive = fetch(source.pin, cache)
            archives[source.package] = archive.name
            files = source_files(source, unpack(source.pin, archive, cache), max_bytes)
            files = {path: data for path, data in files.items() if _utf8(data)}
            if not files:
                raise SystemExit(f"error: {source.package} offers no {language} files to sample")
            candidates.append((source, sorted(files)))
            contents.update({(source.name, path): data for path, data in files.items()})
        picked = sample_files(candidates, files_per_language, seed)
        chosen = {f"{language}/{s.name}/{path}": (s, path) for s, path in picked}
        for source, paths in candidates:
            for path in paths:
                name = f"{language}/{source.name}/{path}"
                if name in forced:
                    chosen.setdefault(name, (source, path))
        for _, (source, path) in sorted(chosen.items()):
            documents.append(Document(source, path, contents[(source.name, path)]))
    known = {document.path for document in documents}
    if missing := sorted(forced - known):
        raise SystemExit(
            "error: hand-written questions name files that are not candidates (too large, "
            f"excluded, or not in SOURCES): {', '.join(missing)}"
        )
    return documents, archives


def write_dataset(
    out: Path,
    documents: Sequence[Document],
    questions: Sequence[CodeQuestion],
    meta: dict[str, Any],
) -> int:
    """Replace ``out`` with the dataset; the number of bytes written.

    A folder that holds files but no ``dataset.json`` is refused rather than deleted.
    """
    lines = [
        question_line(
            QAQuestion(q.id, q.question, q.document, q.answer, q.kind),
            family=q.family,
            match="overlap",
        )
        for q in questions
    ]
    return write_dataset_folder(out, ((d.path, d.content) for d in documents), meta, lines)


def report(
    documents: Sequence[Document],
    questions: Sequence[CodeQuestion],
    count_tokens: Callable[[str], int],
    chunk_tokens: int = 512,
) -> list[str]:
    """The summary table: per language and family, files, questions, answer sizes, overlap."""
    files: Counter[str] = Counter(d.source.language for d in documents)
    size: Counter[str] = Counter()
    chunks: Counter[str] = Counter()
    for document in documents:
        in_document = count_tokens(document.content.decode("utf-8"))
        size[document.source.language] += len(document.content)
        chunks[document.source.language] += -(-in_document // chunk_tokens)
    header = (
        f"{'language':<11}{'family':<12}{'files':>6}{'KB':>6}{'~chunks':>8}{'questions':>10}"
        f"{'dev':>5}{'test':>5}{'lines':>7}{'tokens':>8}{'>512':>6}{'overlap':>9}{'code-only':>10}"
    )
    table = [header, "-" * len(header)]
    groups = [(lang, fam) for fam in FAMILIES for lang in LANGUAGE_ORDER] + [
        ("all", fam) for fam in FAMILIES
    ]
    for language, family in groups:
        chosen = [q for q in questions if q.family == family and language in {"all", q.kind}]
        if not chosen:
            continue
        in_files = sum(files.values()) if language == "all" else files[language]
        kb = (sum(size.values()) if language == "all" else size[language]) // 1000
        est = sum(chunks.values()) if language == "all" else chunks[language]
        splits = Counter(split_of(q.id) for q in chosen)
        lines = mean(len(q.answer.splitlines()) for q in chosen)
        tokens = [count_tokens(q.answer) for q in chosen]
        overlaps = [o for q in chosen if (o := word_overlap(q.question, q.answer)) is not None]
        code_overlaps = [o for q in chosen if (o := word_overlap(q.question, q.code)) is not None]
        table.append(
            f"{language:<11}{family:<12}{in_files:>6}{kb:>6}{est:>8}{len(chosen):>10}"
            f"{splits['dev']:>5}{splits['test']:>5}{lines:>7.1f}{mean(tokens):>8.0f}"
            f"{sum(t > chunk_tokens for t in tokens):>6}{mean(overlaps or [0]):>9.2f}"
            f"{mean(code_overlaps or [0]):>10.2f}"
        )
    return table


def build(args: argparse.Namespace) -> int:
    """Fetch, sample, make and pick the questions, write the dataset, print a summary."""
    started = time.monotonic()
    handwritten_path: Path = args.handwritten
    handwritten = read_handwritten(handwritten_path) if handwritten_path.is_file() else []
    if not handwritten:
        print(f"warning: no hand-written questions in {handwritten_path}", file=sys.stderr)
    documents, archives = gather(
        args.cache,
        args.max_bytes,
        args.files_per_language,
        args.seed,
        {item.document for item in handwritten},
    )
    by_path = {document.path: document for document in documents}
    offered: list[CodeQuestion] = []
    for document in documents:
        offered += doc_comment_questions(document.path, document.source.language, document.content)
    unique = deduplicate(offered)
    questions = choose(unique, args.doc_questions, args.max_per_document, args.seed)
    questions += handwritten_questions(handwritten, by_path)
    questions.sort(key=lambda q: q.id)
    meta = {
        "name": "code",
        "format": "qa-spans",
        "description": (
            f"{len(documents)} source files in {len(LANGUAGE_ORDER)} languages from pinned "
            f"Debian and npm packages; {len(questions)} questions (doc-comment, handwritten) "
            "answered by a definition's whole span (doc comment and code), judged by word "
            "8-gram overlap; split dev/test by SHA-1 of the id"
        ),
        "source": "pinned Debian and npm packages, listed under sources",
        "builder": BUILDER,
        "seed": args.seed,
        "options": {
            "files_per_language": args.files_per_language,
            "max_bytes": args.max_bytes,
            "doc_questions": args.doc_questions,
            "max_per_document": args.max_per_document,
        },
        "sources": [
            {
                "language": s.language,
                "registry": s.registry,
                "package": s.package,
                "version": s.version,
                "archive": archives[s.package],
                "sha256": s.sha256,
                "licence": s.licence,
            }
            for s in SOURCES
        ],
        "handwritten": {
            "path": "bench/code_questions_handwritten.jsonl",
            "sha256": sha256_of(handwritten_path.read_bytes()) if handwritten else None,
        },
        "documents": {
            d.path: sha256_of(d.content) for d in sorted(documents, key=lambda d: d.path)
        },
    }
    size = write_dataset(args.out, documents, questions, meta)
    encoding = load_encoding()
    table = report(documents, questions, lambda text: len(encoding.encode_ordinary(text)))
    print(
        f"packages: {len(SOURCES)}  files: {len(documents)}  doc-comment candidates: "
        f"{len(offered)}, after dedup: {len(unique)}, kept: "
        f"{sum(q.family == 'doc-comment' for q in questions)}; hand-written: {len(handwritten)}"
    )
    print("\n".join(table))
    print(f"wrote {args.out} ({size:,} bytes) in {time.monotonic() - started:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = builder_parser(__doc__, out=DEFAULT_OUT, cache=DEFAULT_CACHE)
    parser.add_argument(
        "--files-per-language",
        type=positive_int,
        default=40,
        help="files sampled per language, in turn from its packages (default 40)",
    )
    parser.add_argument(
        "--max-bytes", type=positive_int, default=60_000, help="skip larger files (default 60000)"
    )
    parser.add_argument(
        "--doc-questions",
        type=positive_int,
        default=60,
        help="doc-comment questions kept per language (default 60)",
    )
    parser.add_argument(
        "--handwritten",
        type=Path,
        default=DEFAULT_HANDWRITTEN,
        help="hand-written questions (default bench/code_questions_handwritten.jsonl)",
    )
    add_sampling(parser, per_document=8, unit="file")
    return build(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
