"""``ragsage ingest`` and ``ragsage query``: the engine on one machine, no services."""

from __future__ import annotations

import argparse
import mimetypes
import sys
from pathlib import Path

from tqdm import tqdm

from ragsage.adapters.parsing import HeuristicBackend, LayoutPageClassifier
from ragsage.adapters.parsing.contextualizing import HeadingWindowContextualizer
from ragsage.cli.files import collect_files
from ragsage.cli.state import load_state, save_state, state_path
from ragsage.core.documents import RawSource
from ragsage.core.errors import RagsageError
from ragsage.core.scopes import Scope
from ragsage.ingestion import IngestionConfig
from ragsage.query import CitationsEvent, DoneEvent, RetrievalOptions, TokenEvent
from ragsage.runtime.memory_kit import MemoryKit


def local_kit() -> MemoryKit:
    """The offline engine the CLI runs on: the real parsers, in-memory stores and models."""
    backend = HeuristicBackend()
    return MemoryKit(
        parser=backend,
        chunker=backend,
        classifier=LayoutPageClassifier(),
        contextualizer=HeadingWindowContextualizer(),
    )


def _source(path: Path) -> RawSource:
    media_type, _ = mimetypes.guess_type(path.name)
    return RawSource(content=path.read_bytes(), filename=path.name, media_type=media_type)


async def ingest_command(args: argparse.Namespace) -> int:
    """Ingest files and directories into the local corpus; non-zero if any failed."""
    kit = local_kit()
    location = state_path(args.state)
    load_state(kit, location)
    scope = Scope(args.namespace)
    pipeline = kit.ingestion(
        IngestionConfig(
            chunk_size=args.chunk_size,
            chunk_overlap=args.chunk_overlap,
            contextualize=not args.no_contextualize,
        )
    )
    files = collect_files(args.paths)
    failures = changed = 0
    bar = tqdm(files, unit="file", disable=len(files) < 5 or not sys.stderr.isatty())
    for path in bar:
        try:
            result = await pipeline.ingest(scope, _source(path), document_id=None)
        except OSError as exc:
            failures += 1
            tqdm.write(f"error: {path}: cannot read ({exc.strerror or exc})", file=sys.stderr)
            continue
        except RagsageError as exc:
            failures += 1
            tqdm.write(f"error: {exc}", file=sys.stderr)
            continue
        if result.duplicate:
            tqdm.write(f"unchanged {path}: same content as {result.document.source}")
        else:
            changed += 1
            vision = f", {result.vision_pages} read by vision" if result.vision_pages else ""
            tqdm.write(f"ingested {path}: {result.chunks} chunks from {result.pages} pages{vision}")
    if changed:
        # Written only when something was ingested, so a failed run leaves the file as it was.
        save_state(kit, location)
    print(
        f"{changed} ingested, {failures} failed; namespace {scope.namespace!r} now holds "
        f"{await kit.query_engine().count(scope)} chunks ({location})"
    )
    return 1 if failures else 0


def _options(args: argparse.Namespace) -> RetrievalOptions:
    return RetrievalOptions(
        top_k=args.top_k,
        hybrid_alpha=args.alpha,
        rerank=False if args.no_rerank else None,
        chunks_above=args.context,
        chunks_below=args.context,
    )


async def query_command(args: argparse.Namespace) -> int:
    """Stream a cited answer from the local corpus."""
    kit = local_kit()
    load_state(kit, state_path(args.state))
    engine = kit.query_engine()
    stream = engine.stream_answer(Scope(args.namespace), args.question, options=_options(args))
    async for event in stream:
        if isinstance(event, TokenEvent):
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, CitationsEvent) and event.citations:
            print("\n\nSources:")
            for citation in event.citations:
                pages = ", ".join(str(number) for number in citation.page_numbers)
                where = f" (page {pages})" if pages else ""
                print(f"  [{citation.number}] {citation.source}{where} — {citation.title}")
        elif isinstance(event, DoneEvent):
            print()
    return 0


async def search_command(args: argparse.Namespace) -> int:
    """Print the ranked passages for a query with every stage's score."""
    kit = local_kit()
    load_state(kit, state_path(args.state))
    result = await kit.query_engine().search(Scope(args.namespace), args.question, _options(args))
    if result.not_found:
        print("no passage passed the relevance floor")
    for rank, hit in enumerate(result.hits, start=1):
        scores = " ".join(
            f"{name}={value:.3f}"
            for name, value in (
                ("fused", hit.score),
                ("vector", hit.vector_score),
                ("keyword", hit.keyword_score),
                ("rerank", hit.rerank_score),
            )
            if value is not None
        )
        print(f"{rank}. {hit.chunk.id} {hit.chunk.source} {scores}")
        print("   " + " ".join(hit.chunk.text.split())[:200])
    timings = " ".join(f"{k}={v:.1f}" for k, v in result.timing_ms.items())
    print(f"timing_ms: {timings}")
    return 0
