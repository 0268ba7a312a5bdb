"""Postgres storage figures: write throughput, search latency and HNSW recall.

    python bench/storage.py [--chunks 100000] [--dim 384] [--queries 200]

Runs against the embedded Postgres (a temporary data directory) unless
RAGSAGE_DATABASE_URL names a server whose role may create databases.  Prints:

* upsert rows/s through PgVectorStore (RLS, generated tsvector, HNSW and GIN
  maintained on insert), next to a raw COPY of the same rows into a bare table;
* dense search p50/p95 at ef_search 40 and 100, and recall@10 of each against
  exact search (the same query with index scans disabled);
* lexical search p50/p95 for two-, three- and eight-word queries, IDF-weighted
  and plain.

Vectors are random unit vectors around a few hundred cluster centres, so
nearest neighbours are meaningful; texts draw words from a Zipf-like
vocabulary so common and rare terms both occur.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector
from sqlalchemy import text

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.postgres import (
    Database,
    PgDocumentStore,
    PgLexicalStore,
    PgVectorStore,
    PostgresConfig,
)
from ragsage.adapters.postgres.dense_statements import vector_literal
from ragsage.core.chunks import Chunk, EmbeddedChunk
from ragsage.core.documents import Document
from ragsage.core.filters import SearchFilters
from ragsage.core.scopes import Scope

MODEL = "bench-random"
SCOPE = Scope("bench")
CHUNKS_PER_DOCUMENT = 100


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def make_corpus(chunks: int, dim: int, rng: random.Random) -> list[EmbeddedChunk]:
    centres = [unit([rng.gauss(0, 1) for _ in range(dim)]) for _ in range(300)]
    spread = 0.75 / math.sqrt(dim)
    vocabulary = [f"term{n}" for n in range(5000)]
    weights = [1 / (n + 1) for n in range(len(vocabulary))]
    corpus = []
    for number in range(chunks):
        document, ordinal = divmod(number, CHUNKS_PER_DOCUMENT)
        centre = centres[rng.randrange(len(centres))]
        # Per-dimension noise scaled by 1/sqrt(dim): each vector keeps a cosine of
        # about 0.8 with its centre, as real embeddings cluster by topic.
        vector = unit([c + rng.gauss(0, spread) for c in centre])
        words = " ".join(rng.choices(vocabulary, weights, k=60))
        chunk = Chunk(
            id=f"doc{document}:{ordinal}",
            document_id=f"doc{document}",
            ordinal=ordinal,
            text=words,
            embed_text=words,
            source=f"doc{document}.md",
        )
        corpus.append(EmbeddedChunk(chunk=chunk, vector=tuple(vector)))
    return corpus


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered):.2f} ms, p95 {p95:.2f} ms"


async def write(db: Database, corpus: list[EmbeddedChunk]) -> float:
    started = time.perf_counter()
    for start in range(0, len(corpus), CHUNKS_PER_DOCUMENT):
        batch = corpus[start : start + CHUNKS_PER_DOCUMENT]
        document_id = batch[0].chunk.document_id
        async with db.session(SCOPE) as session:
            await PgDocumentStore(session).save(
                SCOPE,
                Document(
                    id=document_id,
                    content_hash=document_id,
                    title=document_id,
                    source=f"{document_id}.md",
                ),
                [],
            )
            store = PgVectorStore(
                session, embedding_model=MODEL, embedding_dim=len(batch[0].vector)
            )
            await store.upsert(SCOPE, batch)
    return len(corpus) / (time.perf_counter() - started)


def raw_copy(url: str, corpus: list[EmbeddedChunk], dim: int) -> float:
    """The same rows by binary COPY into a table with no index, policy or generated column."""
    with psycopg.connect(url) as connection:
        register_vector(connection)
        connection.execute(
            "CREATE TEMP TABLE bare (document_id text, ordinal int, text text, "
            f"embedding vector({dim}))"
        )
        started = time.perf_counter()
        sql = "COPY bare (document_id, ordinal, text, embedding) FROM STDIN (FORMAT BINARY)"
        with connection.cursor().copy(sql) as copy:
            copy.set_types(["text", "int4", "text", "vector"])
            for record in corpus:
                chunk = record.chunk
                copy.write_row(
                    (chunk.document_id, chunk.ordinal, chunk.text, Vector(list(record.vector)))
                )
        connection.commit()
        return len(corpus) / (time.perf_counter() - started)


async def exact_neighbours(db: Database, query: tuple[float, ...], dim: int) -> list[str]:
    async with db.session(SCOPE) as session:
        await session.execute(text("SELECT set_config('enable_indexscan', 'off', true)"))
        rows = await session.execute(
            text(
                f"SELECT document_id || ':' || ordinal FROM ragsage_chunks "
                f"ORDER BY embedding::vector({dim}) <=> CAST(:q AS vector({dim})) LIMIT 10"
            ),
            {"q": vector_literal(query)},
        )
        return [str(row[0]) for row in rows]


async def dense(db: Database, queries: list[tuple[float, ...]], dim: int, ef: int) -> None:
    store = PgVectorStore(db, embedding_model=MODEL, embedding_dim=dim, ef_search=ef)
    timings, recalls = [], []
    for query in queries:
        started = time.perf_counter()
        found = await store.search(SCOPE, query, k=10)
        timings.append((time.perf_counter() - started) * 1000)
        truth = set(await exact_neighbours(db, query, dim))
        recalls.append(len(truth & {c.chunk.id for c in found}) / 10)
    print(
        f"dense search ef_search={ef}: {percentiles(timings)}, "
        f"recall@10 {statistics.mean(recalls):.3f}"
    )
    filtered = SearchFilters(document_ids=frozenset({"doc3", "doc7"}))
    timings = []
    for query in queries[:50]:
        started = time.perf_counter()
        found = await store.search(SCOPE, query, k=10, filters=filtered)
        timings.append((time.perf_counter() - started) * 1000)
    print(f"dense search ef_search={ef}, filtered to 2 documents: {percentiles(timings)}")


async def lexical(db: Database, rng: random.Random) -> None:
    # Two- and three-term keyword queries, then eight-term ones shaped like a
    # question (mostly common words, a few rare), ranked with IDF weighting
    # (the default) and with plain ts_rank.
    for weighted in (True, False):
        store = PgLexicalStore(db, text_search_config="english", weighted=weighted)
        for words, low in ((2, 40), (3, 40), (8, 1)):
            timings = []
            for _ in range(100):
                query = " ".join(f"term{rng.randrange(low, 2000)}" for _ in range(words))
                started = time.perf_counter()
                await store.search(SCOPE, query, k=20)
                timings.append((time.perf_counter() - started) * 1000)
            ranking = "idf" if weighted else "plain"
            print(f"lexical search ({ranking}), {words} words: {percentiles(timings)}")


async def run(url: str, chunks: int, dim: int, queries: int) -> None:
    rng = random.Random(11)
    corpus = make_corpus(chunks, dim, rng)
    app_url = url.replace("postgresql://postgres@", "postgresql://ragsage_app@", 1)
    config = PostgresConfig(dsn=url, app_dsn=app_url if app_url != url else None, embedding_dim=dim)
    db = Database(config)
    await db.migrate()
    print(f"corpus: {chunks} chunks of {dim} dimensions, {chunks // CHUNKS_PER_DOCUMENT} documents")
    print(f"raw COPY into a bare table: {raw_copy(url, corpus, dim):,.0f} rows/s")
    print(
        f"PgVectorStore.upsert (RLS, tsvector, HNSW + GIN): {await write(db, corpus):,.0f} rows/s"
    )
    async with db.owner_connection() as connection:
        # What autovacuum does shortly after a bulk load; without statistics the
        # planner may scan the whole table instead of walking the HNSW graph.
        await connection.execute(text("ANALYZE ragsage_chunks"))
    samples = [
        tuple(unit([v + rng.gauss(0, 0.3 / math.sqrt(dim)) for v in rng.choice(corpus).vector]))
        for _ in range(queries)
    ]
    for ef in (40, 100):
        await dense(db, samples, dim, ef)
    await lexical(db, rng)
    await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description="Postgres storage benchmark")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    external = os.environ.get("RAGSAGE_DATABASE_URL")
    if external:
        name = f"bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(external, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        try:
            url = external.rsplit("/", 1)[0] + f"/{name}"
            asyncio.run(run(url, args.chunks, args.dim, args.queries))
        finally:
            with psycopg.connect(external, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        return
    with tempfile.TemporaryDirectory() as directory:
        server = EmbeddedPostgres(Path(directory) / "data")
        server.start()
        try:
            url = server.ensure_database("bench")
            asyncio.run(run(url, args.chunks, args.dim, args.queries))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
