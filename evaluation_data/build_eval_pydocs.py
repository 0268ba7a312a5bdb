"""Build the development retrieval dataset from Debian's Python documentation.

    python -m evaluation_data pydocs [--html DIR] [--out DIR] [--max-pages N]
                                     [--max-questions N] [--seed N]

Without ``--html`` the builder fetches ``python3-doc`` and the versioned package
holding its HTML with ``apt-get download`` into ``--cache`` and unpacks them with
``dpkg-deb -x``; nothing else touches the network.  It copies a fixed, seeded
subset of pages into ``<out>/documents/`` and writes questions in the QA-span
layout read by ``ragsage eval`` (see docs/evaluation-dataset.md).  The data is
never committed: the default output lives under ``.ragsage/``.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from evaluation_data.builder_cli import add_sampling, builder_parser
from evaluation_data.pydocs_questions import (
    FAMILY_SHARES,
    api_items,
    faq_questions,
    glossary_questions,
    glossary_terms,
    identifier_questions,
    question_sections,
    summary_questions,
)
from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import Document, RawSource
from ragsage.core.text import words
from ragsage.evaluation.writing import QAQuestion as Question
from ragsage.evaluation.writing import positive_int, split_table, write_qa_dataset
from ragsage.ingestion import IngestionConfig

DEFAULT_OUT = Path(".ragsage/eval/python-docs")
DEFAULT_CACHE = Path(".ragsage/cache/python3-doc")
# --- source, pages and checks -----------------------------------------------------------


def fetch_html(cache: Path) -> tuple[Path, str]:
    """Download and unpack python3-doc's HTML into ``cache``; the tree and the .deb names."""
    cache = cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    depends = _run(["apt-cache", "depends", "python3-doc"], cache)
    html_package = next(
        (m.group(1) for m in re.finditer(r"Depends: (python3\.\d+-doc)", depends)), None
    )
    if html_package is None:
        raise SystemExit(
            "error: apt-cache does not list python3-doc's versioned doc package; "
            "run 'apt-get update' first, or pass --html DIR"
        )
    _run(["apt-get", "download", "python3-doc", html_package], cache)
    debs = sorted(cache.glob(f"{html_package}_*.deb"))
    if not debs:
        raise SystemExit(f"error: apt-get download left no {html_package} .deb in {cache}")
    tree = cache / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    _run(["dpkg-deb", "-x", str(debs[-1]), str(tree)], cache)
    found = sorted(tree.glob("usr/share/doc/python3*/html/glossary.html"))
    if not found:
        raise SystemExit(f"error: {debs[-1].name} holds no usr/share/doc/python3*/html tree")
    return found[0].parent, debs[-1].name


def _run(command: list[str], cwd: Path) -> str:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise SystemExit(f"error: {command[0]} not found; pass --html DIR instead") from exc
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(command)} failed: {done.stderr.strip()}")
    return done.stdout


def select_pages(root: Path, max_pages: int, seed: int) -> list[str]:
    """Glossary, FAQ and HOWTO pages first, then a seeded sample of the rest.

    The rest is the library, tutorial and language-reference pages; every list is
    sorted before it is shuffled, so the same tree and seed give the same pages.
    """

    def pages(folder: str) -> list[str]:
        return sorted(
            p.relative_to(root).as_posix()
            for p in (root / folder).glob("*.html")
            if p.name != "index.html"
        )

    first = ["glossary.html", *pages("faq"), *pages("howto")]
    rest = [*pages("library"), *pages("tutorial"), *pages("reference")]
    random.Random(seed).shuffle(rest)
    chosen = [page for page in [*first, *rest] if (root / page).is_file()]
    return sorted(chosen[:max_pages])


def page_tokens(backend: HeuristicBackend, path: Path) -> str:
    """The parsed page's tokens, space-joined and space-padded for span look-ups."""
    source = RawSource(content=path.read_bytes(), filename=path.name, media_type="text/html")
    parsed = backend.parse(source)
    return " " + " ".join(words("\n\n".join(page.text for page in parsed.pages))) + " "


def span_in(span: str, tokens: str) -> bool:
    """True when ``span``'s tokens occur contiguously in space-joined ``tokens``."""
    needle = words(span)
    return bool(needle) and f" {' '.join(needle)} " in tokens


def default_chunks(backend: HeuristicBackend, root: Path, pages: list[str]) -> dict[str, list[str]]:
    """Each page's chunks at ragsage's default size and overlap, as space-padded tokens."""
    config = IngestionConfig()
    found = {}
    for page in pages:
        raw = (root / page).read_bytes()
        parsed = backend.parse(RawSource(content=raw, filename=page, media_type="text/html"))
        document = Document(
            id=page, content_hash=hashlib.sha256(raw).hexdigest(), title="", source=page
        )
        made = backend.chunk(
            document, parsed.pages, size=config.chunk_size, overlap=config.chunk_overlap
        )
        found[page] = [" " + " ".join(words(chunk.text)) + " " for chunk in made]
    return found


# --- assembling the dataset -------------------------------------------------------------


def candidates(root: Path, pages: list[str]) -> list[Question]:
    """Every question the chosen pages yield, before checks, dedup and caps."""
    items = {page: api_items((root / page).read_bytes()) for page in pages}
    names: Counter[str] = Counter()
    for page_items in items.values():
        for item in page_items:
            names[item.anchor.rsplit(".", 1)[-1]] += 1
            names.update(set(item.parameters))
    unique = {name for name, seen in names.items() if seen == 1}
    found: list[Question] = []
    for page in pages:
        html = (root / page).read_bytes()
        found += summary_questions(page, items[page])
        found += identifier_questions(page, items[page], unique)
        found += faq_questions(page, question_sections(html))
        if page == "glossary.html":
            found += glossary_questions(page, glossary_terms(html))
    return found


def deduplicate(questions: list[Question]) -> list[Question]:
    """Drop every question whose wording is shared by another pointing elsewhere."""
    by_text: dict[str, list[Question]] = {}
    for question in sorted(questions, key=lambda q: q.id):
        by_text.setdefault(" ".join(words(question.question)), []).append(question)
    kept = []
    for group in by_text.values():
        if len({(q.document, q.answer) for q in group}) == 1:
            kept.append(group[0])
    return kept


def choose(questions: list[Question], limit: int, per_document: int, seed: int) -> list[Question]:
    """A seeded pick within each family's share, at most ``per_document`` per page and kind."""
    pools = {
        kind: sorted((q for q in questions if q.kind == kind), key=lambda q: q.id)
        for kind in FAMILY_SHARES
    }
    for kind, pool in pools.items():
        random.Random(f"{seed}:{kind}").shuffle(pool)
    taken: list[Question] = []
    per_page: Counter[tuple[str, str]] = Counter()

    def take(pool: list[Question], quota: int) -> list[Question]:
        left = []
        for question in pool:
            key = (question.document, question.kind)
            if quota <= 0 or len(taken) >= limit:
                left.append(question)
            elif per_page[key] < per_document:
                taken.append(question)
                per_page[key] += 1
                quota -= 1
        return left

    for kind, share in FAMILY_SHARES.items():
        pools[kind] = take(pools[kind], round(limit * share))
    for kind in FAMILY_SHARES:  # families short of their share leave room for the others
        pools[kind] = take(pools[kind], limit - len(taken))
    return sorted(taken, key=lambda q: q.id)


def write_dataset(
    out: Path, root: Path, pages: list[str], questions: list[Question], source: str
) -> int:
    """Replace ``out`` with the dataset; the number of bytes written."""
    return write_qa_dataset(
        out,
        root,
        pages,
        questions,
        name="python-docs",
        description=(
            f"{len(pages)} pages of the Python 3 documentation; {len(questions)} questions "
            "(summary, identifier, faq, glossary), split dev/test by SHA-1 of the id"
        ),
        source=source,
    )


def build(args: argparse.Namespace) -> int:
    """Fetch or find the HTML, build the dataset, print its summary."""
    if args.html is not None:
        root, source = args.html, f"python3-doc HTML from {args.html.name}"
        if not (root / "glossary.html").is_file():
            raise SystemExit(f"error: {root} has no glossary.html; point --html at .../html")
    else:
        root, deb = fetch_html(args.cache)
        source = f"Debian {deb} (python3-doc), usr/share/doc/{root.parent.name}/html"
    pages = select_pages(root, args.max_pages, args.seed)
    backend = HeuristicBackend()
    tokens = {page: page_tokens(backend, root / page) for page in pages}
    found = candidates(root, pages)
    findable = [q for q in found if span_in(q.answer, tokens[q.document])]
    unique = deduplicate(findable)
    questions = choose(unique, args.max_questions, args.max_per_document, args.seed)
    size = write_dataset(args.out, root, pages, questions, source)
    chunks = default_chunks(backend, root, pages)
    count = sum(len(made) for made in chunks.values())
    mean = sum(len(c.split()) for made in chunks.values() for c in made) // max(count, 1)
    # A span cut by a chunk boundary can match no chunk at this size; the
    # question is kept (another size may hold it whole) but counted here.
    whole = sum(any(span_in(q.answer, c) for c in chunks[q.document]) for q in questions)
    print(f"source: {source}")
    print(f"pages: {len(pages)}  chunks at default size: {count} (~{mean} words each)")
    print(
        f"candidates: {len(found)}, answer findable: {len(findable)}, "
        f"after dedup: {len(unique)}, kept: {len(questions)} "
        f"({whole} with the answer inside one default chunk)"
    )
    print("\n".join(split_table(questions, list(FAMILY_SHARES))))
    print(f"wrote {args.out} ({size:,} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = builder_parser(
        "pydocs",
        __doc__,
        out=DEFAULT_OUT,
        cache=DEFAULT_CACHE,
        cache_help="where the .deb files are downloaded",
    )
    parser.add_argument("--html", type=Path, help="an extracted .../python3.x/html tree")
    parser.add_argument("--max-pages", type=positive_int, default=160)
    parser.add_argument("--max-questions", type=positive_int, default=600)
    add_sampling(parser, per_document=30, unit="page")
    return build(parser.parse_args(argv))
