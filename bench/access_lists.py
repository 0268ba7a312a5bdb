"""Search for a key that may read 1% of a big namespace, against an unbound key, on real text.

    python bench/access_lists.py [--min-chunks 20000] [--share 0.01] [--queries 60]

One namespace is filled through the queue (2 worker processes, hashing
embedder, offline defaults) with real files: Debian's HTML documentation
(the 242 pages ``real_corpus.py`` ingests) and, until the namespace holds
``--min-chunks`` chunks, the modules of Python's standard library (tests
left out), in path order.  Documents are then drawn at random (seed 47) until
they hold ``--share`` of the chunks: those get the list ``group:sales``, every
other document ``group:hr`` (then ``VACUUM (ANALYZE)``, as autovacuum would run
after a change of every row).  The queries are sentences sampled from the
readable documents' chunks, so the bound key has answers to find.

Printed, interleaved query by query (``corpus_search.interleaved``):
hybrid (the default options, top 10), keyword only and dense only, each for
an unbound key and for a key bound to ``group:sales`` (in process, through the
runtime's query engine, as the API runs it); how many of the bound searches
returned all ``top_k`` results while the readable documents held that many
candidates; and what a list change costs: one ``set_access`` (what
``PATCH /v1/documents/<id>`` runs) on the largest document and on documents
holding 10,000 chunks together, each in one transaction.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from corpus_search import interleaved, line, summary
from real_corpus import ingest
from sqlalchemy import text
from stack import local_stack, migrate

from ragsage.adapters.postgres.jobs.documents import set_access
from ragsage.core.scopes import Scope
from ragsage.query import RetrievalOptions
from ragsage.runtime import build_database, build_runtime

NAMESPACE = "corpus"
TOP_K = 10
SALES = frozenset({"group:sales"})
_SENTENCE = re.compile(r"[A-Z][^.!?\n]{40,160}[.!?]")


def real_files(min_chunks: int) -> list[Path]:
    """Debian's HTML pages, then the standard library's modules (about 40 chunks a file)."""
    pages = sorted(
        p for p in Path("/usr/share/doc").rglob("*.htm*") if p.is_file() and not p.is_symlink()
    )
    library = Path(f"/usr/lib/python3.{sys.version_info.minor}")
    modules = sorted(
        p
        for p in library.rglob("*.py")
        if p.is_file()
        and "test" not in p.parts
        and "tests" not in p.parts
        and "site-packages" not in p.parts
        and "dist-packages" not in p.parts
    )
    wanted = max(0, (min_chunks - 8_000) // 25)  # about 25 chunks per module
    return pages + modules[:wanted]


async def assign_lists(settings, share: float) -> tuple[set[str], int, int]:
    """Draw readable documents until they hold ``share`` of the chunks; lists on all."""
    database = build_database(settings)
    scope = Scope(NAMESPACE)
    try:
        async with database.session(scope) as session:
            counts = dict(
                (
                    await session.execute(
                        text("SELECT document_id, count(*) FROM ragsage_chunks GROUP BY 1")
                    )
                ).all()
            )
        total = sum(counts.values())
        order = sorted(counts)
        random.Random(47).shuffle(order)
        readable: set[str] = set()
        held = 0
        for document in order:
            if held >= share * total:
                break
            if held + counts[document] > 2 * share * total:
                continue  # one huge document would overshoot the share
            readable.add(document)
            held += counts[document]
        async with database.session(scope) as session:
            for document in counts:
                access = ["group:sales"] if document in readable else ["group:hr"]
                await set_access(session, document, access)
        await database.refresh_statistics()
        return readable, held, total
    finally:
        await database.dispose()


async def change_cost(settings, readable: set[str]) -> None:
    """Time one list change on the biggest document and on 10,000 chunks' worth."""
    database = build_database(settings)
    scope = Scope(NAMESPACE)
    try:
        async with database.session(scope) as session:
            counts = (
                await session.execute(
                    text(
                        "SELECT document_id, count(*) FROM ragsage_chunks "
                        "GROUP BY 1 ORDER BY 2 DESC"
                    )
                )
            ).all()
        biggest, size = counts[0]
        batch, held = [], 0
        for document, chunks in counts[1:]:
            if held >= 10_000:
                break
            if document not in readable:
                batch.append(document)
                held += chunks
        for label, documents, chunks in (
            (f"largest document ({size:,} chunks)", [biggest], size),
            (f"{len(batch)} documents ({held:,} chunks)", batch, held),
        ):
            for access in (["group:legal"], ["group:hr"]):  # there and back
                started = time.perf_counter()
                async with database.session(scope) as session:
                    for document in documents:
                        await set_access(session, document, access)
                seconds = time.perf_counter() - started
                print(
                    f"  list change, {label} -> {access[0]}: {seconds:.2f} s "
                    f"({seconds / chunks * 1000:.2f} ms a chunk; 10,000 chunks ≈ "
                    f"{seconds / chunks * 10_000:.1f} s)"
                )
    finally:
        await database.dispose()


async def sample_queries(settings, readable: set[str], count: int) -> list[str]:
    database = build_database(settings)
    try:
        async with database.session(Scope(NAMESPACE)) as session:
            texts = list(
                await session.scalars(
                    text("SELECT text FROM ragsage_chunks WHERE document_id = ANY(:d)"),
                    {"d": sorted(readable)},
                )
            )
    finally:
        await database.dispose()
    sentences = sorted({m.group(0) for body in texts for m in _SENTENCE.finditer(body)})
    random.Random(5).shuffle(sentences)
    return sentences[:count]


async def measure(settings, queries: list[str]) -> None:
    runtime = build_runtime(settings)
    engine = runtime.query_engine()
    unbound, bound = Scope(NAMESPACE), Scope(NAMESPACE, SALES)
    full: dict[str, list[int]] = {}

    def path(scope: Scope, options: RetrievalOptions, kind: str = ""):
        async def run(i: int) -> list[tuple[str, int]]:
            found = await engine.search(scope, queries[i], options)
            if kind:
                counts = full.setdefault(kind, [0, 0])
                counts[0] += 1
                counts[1] += len(found.hits) < options.top_k
            return [(h.chunk.document_id, h.chunk.ordinal) for h in found.hits]

        return run

    hybrid = RetrievalOptions(top_k=TOP_K)
    keyword = RetrievalOptions(top_k=TOP_K, hybrid_alpha=0.0)
    dense = RetrievalOptions(top_k=TOP_K, hybrid_alpha=1.0)
    kinds = {"hybrid": hybrid, "keyword only": keyword, "dense only": dense}
    paths = {}
    for kind, options in kinds.items():
        paths[f"{kind}, unbound key"] = path(unbound, options)
        paths[f"{kind}, bound key"] = path(bound, options, kind)
    rounds, _ = await interleaved(paths, len(queries))
    figures = {name: summary(times) for name, times in rounds.items()}
    for name, figure in figures.items():
        print(line(name, figure))
    for kind in kinds:
        ratio = figures[f"{kind}, bound key"]["p50"] / figures[f"{kind}, unbound key"]["p50"]
        print(f"  {kind}: bound p50 / unbound p50 = {ratio:.2f}")
    for kind, (searches, short) in full.items():
        # Keyword search returns only chunks that share a term with the query.
        print(f"  {kind}, bound key: {short} of {searches} searches short of top_k={TOP_K}")
    await runtime.aclose()


def listed_corpus(stack, files: list[Path], share: float, processes: int, tmp: Path) -> set[str]:
    """Ingest ``files``, give ``share`` of the chunks ``group:sales``; the readable ids."""
    settings = stack.settings
    migrate(settings)
    wall, *_ = ingest(settings, files, Path("/"), processes, tmp / "worker.log")
    readable, held, total = asyncio.run(assign_lists(settings, share))
    # The lists were set after ingestion, which rewrote every chunk row; the
    # old rows' index entries stay until a vacuum, as autovacuum would soon
    # do here.  (Uploads that carry their list write each chunk once.)
    with psycopg.connect(stack.owner_url, autocommit=True) as owner:
        owner.execute("VACUUM (ANALYZE) ragsage_chunks")
    print(
        f"{len(files)} files ingested in {wall:.0f} s: {total:,} chunks; group:sales "
        f"reads {len(readable)} documents, {held:,} chunks ({held / total:.1%})"
    )
    return readable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-chunks", type=int, default=20_000)
    parser.add_argument("--share", type=float, default=0.01)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    files = real_files(args.min_chunks)
    with local_stack("access_lists") as stack, tempfile.TemporaryDirectory() as tmp:
        settings = stack.settings
        readable = listed_corpus(stack, files, args.share, args.processes, Path(tmp))
        queries = asyncio.run(sample_queries(settings, readable, args.queries))
        print(f"{len(queries)} queries, sentences of readable chunks; figures in ms:")
        asyncio.run(measure(settings, queries))
        asyncio.run(change_cost(settings, readable))


if __name__ == "__main__":
    main()
