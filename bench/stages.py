"""Milliseconds per MB of input for every CPU stage of ingestion, at several document sizes.

    python bench/stages.py [--sizes 100KB,1MB,10MB] [--runs 5]
                           [--kinds html-site,html-docs,markdown,pdf]
                           [--doc-root /usr/share/doc] [--tile] [--no-check]

Every input is ONE document of the given size (1 MB = 10^6 bytes of the file as
uploaded), since the question is whether a stage stays linear in the size of a
document:

``html-site``
    pages from ``tests/unit/parsing/site_pages.py`` (the libxslt-manual layout
    of nested tables with a menu cell beside the content, and modern pages with
    navigation landmarks and a breadcrumb trail), their bodies joined into one page.
``html-docs``
    the bodies of the real HTML pages under ``--doc-root`` (every regular
    .html/.htm, no symlinks, sorted by path, as ``bench/site_chrome.py`` lists
    them), joined until the size is reached; with no pages there, the
    ``html-site`` shape, and the output says so.
``markdown``
    the real Markdown files under ``--doc-root`` (.md/.markdown, gzipped or not,
    sorted by path; on Debian mostly Node.js's API manual), joined; with none
    there, a generated document of headings at four levels, paragraphs, nested
    lists, fenced code and pipe tables.
``pdf``
    a born-digital PDF drawn with reportlab (running header, headings,
    paragraphs, page footers; uncompressed content streams, so its bytes follow
    its text), kept under ``~/.cache/ragsage-bench/`` so each size is drawn once.

``--tile`` makes every size repeat the whole pieces (pages, files) of the
smallest input, so that only the size changes between sizes, not the kind of
text: the real corpora are joined in path order, and a bigger document of them
holds other packages' pages (on Debian, 10 MB of Markdown is mostly Node.js
changelogs, whose commit lists are far longer blocks than the first files').
A ratio over 2 that goes away with ``--tile`` is the content, not the code.

The stages are the engine's own objects with the default (offline) settings,
built as ``ragsage.runtime.build_runtime`` builds them and called as
``IngestionPipeline`` calls them: parse (``HeuristicBackend.parse``), classify
(``LayoutPageClassifier.classify`` on every page), chunk
(``HeuristicBackend.chunk`` with ``IngestionConfig``'s 512/64 tokens),
contextualize (``HeadingWindowContextualizer.texts``, the synchronous body of
what the pipeline runs on a thread) and embed (the hashing embedder, in the
pipeline's batches of 64 embed texts).

Each (kind, size) is ingested ``--runs`` times, interleaved (every kind at
sizes A, B, C, then again A, B, C ...) so machine noise hits all sizes alike,
after one untimed warm-up per kind; the table shows medians.  For each kind
and stage the last lines give ms/MB at the largest size divided by ms/MB at
the smallest: above 2.0 is FAIL, and the exit status is 1 unless
``--no-check`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

# Run as a script, this folder is on sys.path: its sibling modules import directly.
from stage_inputs import KINDS, MB, Input, build_inputs, parse_size

from ragsage.adapters.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.core.chunks import Chunk
from ragsage.core.documents import Document, RawSource
from ragsage.core.pages import PageRoute
from ragsage.core.ports import Embedder
from ragsage.ingestion import IngestionConfig
from ragsage.runtime import make_embedder
from ragsage.settings import Settings

# --- the stages ---------------------------------------------------------------------------

STAGES = ("parse", "classify", "chunk", "contextualize", "embed")
LIMIT = 2.0


@dataclass(frozen=True, slots=True)
class Engine:
    """The CPU stages as the runtime builds them with the default settings."""

    backend: HeuristicBackend
    classifier: LayoutPageClassifier
    contextualizer: HeadingWindowContextualizer
    embedder: Embedder
    config: IngestionConfig
    loop: asyncio.AbstractEventLoop


def build_engine(loop: asyncio.AbstractEventLoop) -> Engine:
    settings = Settings(embedder="hashing")
    embedder = make_embedder(
        settings, settings.embedder, settings.embedding_model_name, settings.embedding_dim
    )
    return Engine(
        backend=HeuristicBackend(),
        classifier=LayoutPageClassifier(),
        contextualizer=HeadingWindowContextualizer(),
        embedder=embedder,
        config=IngestionConfig(),
        loop=loop,
    )


@dataclass(slots=True)
class Outcome:
    ms: dict[str, float] = field(default_factory=dict)
    pages: int = 0
    chunks: int = 0


async def embed_all(embedder: Embedder, chunks: Sequence[Chunk], batch: int) -> int:
    vectors = 0
    for start in range(0, len(chunks), batch):
        texts = [chunk.embed_text for chunk in chunks[start : start + batch]]
        vectors += len(await embedder.embed(texts))
    return vectors


def ingest_once(engine: Engine, source: RawSource) -> Outcome:
    """One document through every CPU stage, each timed on its own."""
    outcome = Outcome()
    clock = time.perf_counter
    config = engine.config

    started = clock()
    parsed = engine.backend.parse(source)
    outcome.ms["parse"] = (clock() - started) * 1000
    document = Document(
        id="bench",
        content_hash="0" * 64,
        title=parsed.title or source.filename,
        source=source.filename,
        metadata={**parsed.metadata, **source.metadata},
    )

    started = clock()
    routes = [engine.classifier.classify(page) for page in parsed.pages]
    outcome.ms["classify"] = (clock() - started) * 1000
    if PageRoute.VISION in routes:
        raise SystemExit(f"{source.filename}: a page routes to vision; these inputs have text")
    # What the pipeline chunks: the pages resolved, none of them transcribed.
    pages = [replace(page, image=None, route=PageRoute.TEXT) for page in parsed.pages]

    started = clock()
    chunks = list(
        engine.backend.chunk(document, pages, size=config.chunk_size, overlap=config.chunk_overlap)
    )
    outcome.ms["chunk"] = (clock() - started) * 1000

    started = clock()
    texts = engine.contextualizer.texts(document, chunks, pages)
    chunks = [
        replace(chunk, embed_text=text or chunk.text)
        for chunk, text in zip(chunks, texts, strict=True)
    ]
    outcome.ms["contextualize"] = (clock() - started) * 1000

    started = clock()
    vectors = engine.loop.run_until_complete(
        embed_all(engine.embedder, chunks, config.embed_batch_size)
    )
    outcome.ms["embed"] = (clock() - started) * 1000
    if vectors != len(chunks):
        raise SystemExit(f"{source.filename}: {vectors} vectors for {len(chunks)} chunks")
    outcome.pages, outcome.chunks = len(pages), len(chunks)
    return outcome


# --- the report ---------------------------------------------------------------------------


@dataclass(slots=True)
class Samples:
    item: Input
    ms: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STAGES})
    pages: int = 0
    chunks: int = 0

    @property
    def megabytes(self) -> float:
        return len(self.item.source.content) / MB

    def median(self, stage: str) -> float:
        return statistics.median(self.ms[stage])

    def per_mb(self, stage: str) -> float:
        return self.median(stage) / self.megabytes


def measure(engine: Engine, inputs: Sequence[Input], runs: int) -> list[Samples]:
    samples = [Samples(item) for item in inputs]
    warmed: set[str] = set()
    for sample in samples:  # loads the encoding and the format libraries, untimed
        if sample.item.kind not in warmed:
            ingest_once(engine, sample.item.source)
            warmed.add(sample.item.kind)
    for run in range(1, runs + 1):
        started = time.perf_counter()
        for sample in samples:
            gc.collect()  # the previous document's garbage is not this one's cost
            outcome = ingest_once(engine, sample.item.source)
            for stage in STAGES:
                sample.ms[stage].append(outcome.ms[stage])
            sample.pages, sample.chunks = outcome.pages, outcome.chunks
        print(f"run {run}/{runs}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return samples


def print_inputs(samples: Sequence[Samples]) -> None:
    print(f"{'kind':<10} {'size':>6} {'bytes':>11} {'pages':>6} {'chunks':>7}  origin")
    for s in samples:
        print(
            f"{s.item.kind:<10} {s.item.label:>6} {len(s.item.source.content):>11,} "
            f"{s.pages:>6} {s.chunks:>7}  {s.item.origin}"
        )


def print_table(samples: Sequence[Samples]) -> None:
    header = f"{'kind':<10} {'size':>6} {'stage':<14} {'ms (median)':>12} {'ms/MB':>10}"
    print(f"\n{header} {'spread':>7}")
    for s in samples:
        for stage in STAGES:
            median = s.median(stage)
            spread = (max(s.ms[stage]) - min(s.ms[stage])) / median if median else 0.0
            print(
                f"{s.item.kind:<10} {s.item.label:>6} {stage:<14} {median:>12.2f} "
                f"{s.per_mb(stage):>10.2f} {spread:>6.0%}"
            )


def print_ratios(samples: Sequence[Samples]) -> list[str]:
    """One line per kind and stage; returns the failing ones."""
    failures = []
    kinds = list(dict.fromkeys(s.item.kind for s in samples))
    for kind in kinds:
        mine = sorted((s for s in samples if s.item.kind == kind), key=lambda s: s.megabytes)
        if len(mine) < 2:
            continue
        small, large = mine[0], mine[-1]
        if kind == kinds[0]:
            print(
                f"\nlinearity: ms/MB at {large.item.label} / ms/MB at {small.item.label} "
                f"(limit {LIMIT:g})"
            )
        for stage in STAGES:
            base = small.per_mb(stage)
            ratio = large.per_mb(stage) / base if base > 0 else float("inf")
            verdict = "PASS" if ratio <= LIMIT else "FAIL"
            if verdict == "FAIL":
                failures.append(f"{kind}/{stage}")
            print(f"{kind:<10} {stage:<14} {ratio:>6.2f}  {verdict}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="100KB,1MB,10MB",
        type=lambda text: [parse_size(part) for part in text.split(",") if part.strip()],
        help="document sizes, comma-separated (default 100KB,1MB,10MB; 1MB = 10^6 bytes)",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs per input (default 5)")
    parser.add_argument(
        "--kinds",
        default=",".join(KINDS),
        type=lambda text: [part.strip() for part in text.split(",") if part.strip()],
        help=f"input kinds, comma-separated (default {','.join(KINDS)})",
    )
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument(
        "--tile",
        action="store_true",
        help="every size repeats the smallest input's text: size alone varies, not content",
    )
    parser.add_argument("--no-check", action="store_true", help="print only; always exit 0")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    unknown = [kind for kind in args.kinds if kind not in KINDS]
    if unknown:
        parser.error(f"unknown kinds {', '.join(unknown)}; known: {', '.join(KINDS)}")

    started = time.perf_counter()
    inputs = build_inputs(args.kinds, sorted(set(args.sizes)), args.doc_root, tile=args.tile)
    print(f"inputs built in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    loop = asyncio.new_event_loop()
    try:
        samples = measure(build_engine(loop), inputs, args.runs)
    finally:
        loop.close()
    print_inputs(samples)
    print_table(samples)
    failures = print_ratios(samples)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
    print(f"\npeak RSS: {peak:.0f} MB; wall time {time.perf_counter() - started:.0f} s")
    if failures and not args.no_check:
        print(f"over the {LIMIT:g}x limit: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
