"""HTTP search latency and throughput, next to the same search in process.

    python bench/api_search.py [--sizes 10000 100000] [--requests 400]

For each corpus size: loads that many chunks (offline hashing embedder,
384 dimensions) into an embedded Postgres, serves the API with gunicorn (2
workers x 8 threads), and fires ``POST /v1/search`` from 1, 8 and 32
concurrent clients, printing p50/p95/p99 latency and requests/s; then times
the same queries through ``QueryEngine.search`` in this process, which is the
floor the HTTP path adds to (twice: first with each query's terms new to
the keyword count cache, then with them cached).  Client, server and database
share the machine's cores, so the concurrent figures are what one box does end
to end.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import threading
import time
from typing import Any

import httpx
from sqlalchemy import text
from stack import local_stack, serve_api

from ragsage.adapters.postgres.keys import create_key
from ragsage.core.chunks import Chunk, EmbeddedChunk
from ragsage.core.documents import Document
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.query import RetrievalOptions
from ragsage.runtime import build_runtime
from ragsage.settings import Settings

SCOPE = Scope("bench")
PER_DOCUMENT = 100
VOCABULARY = [f"{stem}{n}" for stem in ("alpha", "delta", "omega", "sigma") for n in range(1500)]


def sentence(rng: random.Random) -> str:
    # Log-uniform word choice: a few words everywhere, most words rare, as in prose.
    words = [VOCABULARY[int(len(VOCABULARY) ** rng.random()) - 1] for _ in range(40)]
    return " ".join(words)


async def load(settings: Settings, chunks: int, rng: random.Random) -> None:
    runtime = build_runtime(settings)
    await runtime.database.migrate()
    loaded = 0
    async with runtime.database.session(SCOPE) as session:
        loaded = int((await session.scalar(text("SELECT count(*) FROM ragsage_chunks"))) or 0)
    started = time.perf_counter()
    for document in range(loaded // PER_DOCUMENT, chunks // PER_DOCUMENT):
        texts = [sentence(rng) for _ in range(PER_DOCUMENT)]
        vectors = await runtime.embedder.embed(texts)
        doc = Document(
            id=f"d{document}",
            content_hash=f"h{document}",
            title=f"D{document}",
            source=f"d{document}.md",
        )
        records = [
            EmbeddedChunk(
                Chunk(
                    id=f"d{document}:{i}",
                    document_id=doc.id,
                    ordinal=i,
                    text=t,
                    embed_text=t,
                    source=doc.source,
                ),
                tuple(v),
            )
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ]
        async with runtime.database.session(SCOPE) as session:
            vectors_store, _, documents = runtime.stores(session)
            await documents.save(SCOPE, doc, [])
            await vectors_store.upsert(SCOPE, records)
    async with runtime.database.owner_connection() as connection:
        await connection.execute(text("ANALYZE ragsage_chunks"))
    print(f"  loaded to {chunks:,} chunks in {time.perf_counter() - started:.0f} s")
    await runtime.aclose()


def queries(rng: random.Random, count: int) -> list[str]:
    return [
        " ".join(rng.choice(VOCABULARY[:3000]) for _ in range(rng.randint(2, 4)))
        for _ in range(count)
    ]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def fire(
    url: str, key: str, batch: list[str], clients: int, body: dict[str, Any] | None = None
) -> tuple[list[float], float, list[int]]:
    """Latencies (ms), wall seconds and result counts of searching ``batch`` from ``clients``."""
    latencies: list[float] = []
    counts: list[int] = []
    lock = threading.Lock()
    pending = list(batch)
    sent = {"top_k": 10} if body is None else body

    def client() -> None:
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            while True:
                with lock:
                    if not pending:
                        return
                    query = pending.pop()
                started = time.perf_counter()
                response = http.post("/v1/search", json={"query": query, **sent})
                elapsed = (time.perf_counter() - started) * 1000
                response.raise_for_status()
                with lock:
                    latencies.append(elapsed)
                    counts.append(len(response.json()["results"]))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, time.perf_counter() - started, counts


async def in_process(settings: Settings, batch: list[str]) -> tuple[list[float], list[float]]:
    """Per-query latencies of two passes over ``batch``."""
    runtime = build_runtime(settings)
    engine = runtime.query_engine()
    passes: list[list[float]] = [[], []]
    for timings in passes:
        for query in batch:
            started = time.perf_counter()
            await engine.search(SCOPE, query, RetrievalOptions(top_k=10))
            timings.append((time.perf_counter() - started) * 1000)
    await runtime.aclose()
    return passes[0], passes[1]


async def new_key(settings: Settings, scope: Scope = SCOPE) -> str:
    runtime = build_runtime(settings)
    async with runtime.database.session(scope) as session:
        key = (await create_key(session, scope, Role.READ, "bench")).key
    await runtime.aclose()
    return key


def main() -> None:
    parser = argparse.ArgumentParser(description="API search benchmark")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    rng = random.Random(3)
    with local_stack("bench") as stack:
        settings, base = stack.settings, stack.directory
        for size in sorted(args.sizes):
            print(f"corpus of {size:,} chunks:")
            asyncio.run(load(settings, size, rng))
            key = asyncio.run(new_key(settings))
            batch = queries(rng, args.requests)
            # The first pass meets most query terms for the first time, so each
            # search also counts its new terms (cached for ten minutes, migration
            # 13); the second pass asks the same queries with the counts cached.
            first, again = asyncio.run(in_process(settings, batch[:200]))
            for label, local in (("first sight", first), ("counts cached", again)):
                print(
                    f"  in process, {label:<14} p50 {statistics.median(local):6.1f} ms  "
                    f"p95 {percentile(local, 0.95):6.1f} ms  p99 {percentile(local, 0.99):6.1f} ms"
                )
            server, url = serve_api(settings, base / f"api-{size}.log")
            try:
                fire(url, key, batch[:20], 4)  # warm every worker's pools
                for clients in (1, 8, 32):
                    latencies, wall, _ = fire(url, key, batch, clients)
                    rate = len(batch) / wall
                    print(
                        f"  HTTP x{clients:<3} p50 {statistics.median(latencies):6.1f} ms  "
                        f"p95 {percentile(latencies, 0.95):6.1f} ms  "
                        f"p99 {percentile(latencies, 0.99):6.1f} ms  {rate:6.1f} req/s"
                    )
            finally:
                server.terminate()
                server.wait(30)


if __name__ == "__main__":
    sys.exit(main())
