"""Many tenants of very different sizes in one set of tables: load, search, size (issue 53).

    python bench/scale.py [--chunks 1000000] [--tenants 1000] [--queries 200] [--seed 53]
                          [--data-dir DIR] [--reuse] [--no-http] [--load-only]
                          [--writers 2] [--hnsw-during-load] [--shared-buffers 4GB]
                          [--recall-queries 100] [--graph-rows 10000]

The corpus is real text (``bench/scale_corpus.py``: Debian's HTML documentation
and the Python manual, the Python standard library, this venv's site-packages,
the Linux kernel's documentation and sources from Debian's ``linux-source``),
cut into chunks of 100-300 words, exact repeats dropped.  ``--chunks`` are
spread over ``--tenants`` namespaces with a long tail: the largest tenant
holds a fifth of all chunks, the others shares in proportion to 1/rank (rank
2 to N), at least 10 each.  At 1,000,000 chunks and 1,000 tenants that is
200,000; 61,700; ... 12,300 at rank 10; 1,230 at rank 100; about 250 at rank
500 and 123 at rank 1,000.  At 100,000 chunks every size is a tenth.  Each
tenant takes whole documents in the pool's order from a random starting
document, so its text is coherent, never repeats within it, and may repeat
in other tenants.  The five sources give 578,159 distinct chunks here, so a
1,000,000-chunk corpus repeats text across tenants; without ``linux-source``
(``apt-get install -y python3-doc linux-source``, as root) they give about
103,000, too few for the largest tenant at 1,000,000 chunks, and the run says
so and stops.

Loading goes through the store code the worker's final write uses: for each
batch of documents (about 500 chunks) one scoped transaction runs
``PgVectorStore.upsert`` (staging COPY, the move into ``ragsage_chunks`` with
its keyword column, and whatever the chunk table's triggers keep, such as
the keyword term counts) and ``PgDocumentStore.save`` (documents
``ready``, as the worker leaves them); the first write of a namespace makes
its active generation (``write_generation``).  No upload rows (blobs, jobs,
pages) are written.  Vectors come from the hashing embedder at 384
dimensions: the figures measure storage, not a model.  ``--writers`` batches
are written at once (default 2: the writer's Python and Postgres each get a
core).  The largest tenant's documents carry access lists: documents drawn at
random until they hold about 1% of its chunks are written by a session bound
to ``group:sales``, the rest by one bound to ``group:hr``; a document written
so gets its writer's list, as an upload by a bound key does.

The store code offers one index rebuild: ``Database.migrate`` builds a
missing width's HNSW index (concurrently, on a table holding rows).  So by
default the 384-wide HNSW index is dropped after the migrations and
``Database.migrate`` builds it after the load, with ``maintenance_work_mem``
set for the graph to fit (printed); ``--hnsw-during-load`` keeps it and pays
for it on every insert.  The keyword GIN index, the access-list GIN index and
the btrees are maintained during the load (nothing in the store code drops
or rebuilds them).  Then ``VACUUM (ANALYZE)``, as autovacuum soon runs after
a bulk insert: right after a load without it, a key bound to a few documents
searched ten times slower (20 ms against 1.5 ms at 20,000 chunks).

After the load (or its reuse) comes one round of ``ragsage graphs``
(``maintain_graphs``): every tenant of ``--graph-rows`` chunks or more gets an
HNSW graph of its own, and the time and size of each build are printed.
``--graph-rows 0`` drops them again, to measure the shared graph alone.

The Postgres data directory is kept (``--data-dir``, default
``~/.cache/ragsage-scale/pg-<chunks>``; the server's files are in its ``pg``
folder); a finished load writes ``scale.json`` beside them with the corpus
parameters, and ``--reuse`` skips the load when they match.  The server is
the embedded Postgres (``EmbeddedPostgres``) with ``shared_buffers`` set by
``--shared-buffers``; the migrations run through ``Database.migrate`` as the
stack runs them, on every start.

Measured, for a small tenant (rank N/2), a mid-size one (rank about N^(1/3))
and the largest, with queries of two kinds per tenant: ``sampled`` (5-12
consecutive words of a sentence of one of its chunks, double quotes and
leading minus signs taken out so they stay plain questions) and ``common``
(3-4 of the 20 words, stop words left out, found in the most of its chunks),
both drawn from up to 4,000 of its chunks picked at random (seeded):

* in process, through ``Runtime.with_engine`` and ``QueryEngine.search`` (what
  ``POST /v1/search`` runs), top 10: hybrid (default weights), dense only and
  keyword only, p50/p95/p99, the three interleaved query by query;
* dense recall@10 of ``PgVectorStore.search`` against an exact scan of the
  tenant (the same query with ``enable_indexscan`` off), over the first
  ``--recall-queries`` queries of each kind; a result at a distance no greater
  than the exact tenth's counts as a hit (ties); beside it the path the store
  took for the tenant (``exact`` ranking, a ``walk`` of the shared HNSW graph,
  or of the tenant's ``own``);
* over HTTP (gunicorn, 2 workers x 8 threads, request rate limits off, a read
  key per tenant): one client for each mode and kind, then hybrid on sampled
  queries from 8 and 32 clients, with requests/s and the CPU seconds the API
  and Postgres processes spent over that interval;
* a key bound to ``group:sales`` on the largest tenant: each mode's latency
  and how many results came back against ``top_k``;
* one more document (10-60 chunks, not in the tenant) ingested into the
  largest and the small tenant through the same store path, then deleted;
* the database on disk (heap, TOAST, HNSW, GIN and other indexes of
  ``ragsage_chunks``, whole database) and the server's memory (RSS and PSS of
  the postmaster and its children, ``shared_buffers``).

The client, the API and Postgres share the machine's cores.  Each phase
prints how long it took.  On this 2-core machine (shared with other work) a
100,000-chunk run took about 6 minutes, its load about 2 (about 1,000 chunks
a second through the store, falling slowly as the table grows).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import re
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import api_search
import psycopg
import scale_corpus
from scale_corpus import Pool, PoolDoc
from sqlalchemy import text
from stack import serve_api

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.adapters.postgres.graphs import maintain_graphs
from ragsage.adapters.postgres.jobs.documents import delete_document
from ragsage.adapters.postgres.keys import create_key
from ragsage.adapters.postgres.migrations import width_index_name
from ragsage.adapters.postgres.rows import NAMESPACE_ACTIVE_GENERATION
from ragsage.core.chunks import Chunk, EmbeddedChunk
from ragsage.core.documents import Document
from ragsage.core.identity import content_hash, document_id_for
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.core.text import content_words
from ragsage.query import RetrievalOptions
from ragsage.runtime import Runtime, build_runtime
from ragsage.settings import Settings

DIM, TOP_K, BATCH_CHUNKS, WARMUPS = 384, 10, 500, 10
SALES, HR = frozenset({"group:sales"}), frozenset({"group:hr"})
MARKER = "scale.json"
MODES = {
    "hybrid": RetrievalOptions(top_k=TOP_K),
    "dense": RetrievalOptions(top_k=TOP_K, hybrid_alpha=1.0),
    "keyword": RetrievalOptions(top_k=TOP_K, hybrid_alpha=0.0),
}
_T = TypeVar("_T")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def tenant_name(rank: int) -> str:
    return f"t{rank:04d}"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def triple(values: list[float]) -> str:
    return " / ".join(f"{percentile(values, s):5.1f}" for s in (0.5, 0.95, 0.99))


# ---------------------------------------------------------------- the server


@dataclass
class Servers:
    postgres: EmbeddedPostgres
    owner_url: str
    settings: Settings
    directory: Path
    redis: EmbeddedRedis

    @property
    def postmaster(self) -> int:
        return int((self.postgres.data_dir / "postmaster.pid").read_text().split()[0])


def owner_sql(url: str, statement: str, params: tuple = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def start_servers(pg_dir: Path, redis_dir: Path, shared_buffers: str) -> Servers:
    postgres = EmbeddedPostgres(pg_dir)
    postgres.start()
    current = owner_sql(
        postgres.url(), "SELECT setting, unit FROM pg_settings WHERE name = %s", ("shared_buffers",)
    )
    wanted = owner_sql(postgres.url(), "SELECT pg_size_bytes(%s)", (shared_buffers,))[0][0]
    if int(current[0][0]) * 8192 != int(wanted):
        owner_sql(postgres.url(), f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
        postgres.stop()
        postgres.start()
    redis = EmbeddedRedis(redis_dir)
    redis.start()
    owner = postgres.ensure_database("scale")
    settings = Settings.from_env(
        {},
        database_url=owner,
        app_database_url=owner.replace("postgres@", "ragsage_app@", 1),
        redis_url=redis.url(0),
        embedding_dim=DIM,
        embedder="hashing",
        # The figures are the search's, not the request limiter's.
        rate_limit_search_key="none",
        rate_limit_search_namespace="none",
    )
    return Servers(postgres, owner, settings, redis_dir.parent, redis)


# ---------------------------------------------------------------- the load


@dataclass
class Batch:
    scope: Scope
    docs: list[tuple[PoolDoc, list[str]]] = field(default_factory=list)

    @property
    def chunks(self) -> int:
        return sum(len(texts) for _, texts in self.docs)


def readable_docs(plan: list[tuple[int, int]], seed: int, share: float = 0.01) -> set[int]:
    """Pool indexes of the largest tenant's documents bound to ``group:sales``."""
    total = sum(n for _, n in plan)
    order = list(plan)
    random.Random(f"{seed}:sales").shuffle(order)
    chosen, held = set(), 0
    for index, n in order:
        if held >= share * total:
            break
        if held + n <= 2 * share * total:
            chosen.add(index)
            held += n
    return chosen


def batches(pool: Pool, plans: list[list[tuple[int, int]]], seed: int) -> Iterator[Batch]:
    sales = readable_docs(plans[0], seed)
    for rank, plan in enumerate(plans, 1):
        namespace = tenant_name(rank)
        current: dict[frozenset[str] | None, Batch] = {}
        for (index, _), (doc, texts) in zip(plan, scale_corpus.stream(pool, plan), strict=True):
            principals = None if rank > 1 else SALES if index in sales else HR
            batch = current.setdefault(principals, Batch(Scope(namespace, principals)))
            batch.docs.append((doc, texts))
            if batch.chunks >= BATCH_CHUNKS:
                yield current.pop(principals)
        yield from current.values()


def records(namespace: str, doc: PoolDoc, texts: list[str], vectors) -> tuple[Document, list]:
    """The document and chunk rows a worker would write for ``doc``'s chunks."""
    now = datetime.now(UTC)
    name = f"{doc.source}/{doc.name}"  # two sources may hold the same relative path
    document = Document(
        id=document_id_for(namespace, name),
        content_hash=content_hash("\n\n".join(texts).encode()),
        title=Path(doc.name).name,
        source=name,
        created_at=now,
    )
    rows, at = [], 0
    for ordinal, (body, vector) in enumerate(zip(texts, vectors, strict=True)):
        chunk = Chunk(
            id=f"{document.id}:{ordinal}",
            document_id=document.id,
            ordinal=ordinal,
            text=body,
            embed_text=f"{document.title}\n\n{body}",
            heading_path=(document.title,),
            page_numbers=(1,),
            source=name,
            created_at=now,
            start_char=at,
            end_char=at + len(body),
        )
        at += len(body) + 2
        rows.append(EmbeddedChunk(chunk=chunk, vector=tuple(vector)))
    return document, rows


async def write_batch(runtime: Runtime, batch: Batch) -> None:
    """One transaction, as the worker's final write: the chunks, then the document rows."""
    namespace = batch.scope.namespace
    embed = [f"{Path(doc.name).name}\n\n{body}" for doc, texts in batch.docs for body in texts]
    vectors = await runtime.embedder.embed(embed)
    written, at = [], 0
    for doc, texts in batch.docs:
        written.append(records(namespace, doc, texts, vectors[at : at + len(texts)]))
        at += len(texts)
    async with runtime.database.session(batch.scope) as session:
        chunk_store, _, document_store = runtime.stores(session)
        await chunk_store.upsert(batch.scope, [row for _, rows in written for row in rows])
        for document, _ in written:
            await document_store.save(batch.scope, document, [])


async def load_rows(runtime: Runtime, pool: Pool, plans, seed: int, writers: int) -> int:
    total = sum(n for plan in plans for _, n in plan)
    queue: asyncio.Queue[Batch | None] = asyncio.Queue(maxsize=writers * 2)
    done = [0]
    started = time.perf_counter()
    step = max(total // 20, 1)

    async def writer() -> None:
        while (batch := await queue.get()) is not None:
            await write_batch(runtime, batch)
            before = done[0]
            done[0] += batch.chunks
            if done[0] // step != before // step:
                rate = done[0] / (time.perf_counter() - started)
                print(f"    {done[0]:>10,} of {total:,} chunks, {rate:,.0f} chunks/s", flush=True)

    tasks = [asyncio.create_task(writer()) for _ in range(writers)]
    for batch in batches(pool, plans, seed):
        await queue.put(batch)
    for _ in tasks:
        await queue.put(None)
    await asyncio.gather(*tasks)
    return done[0]


def graph_memory(rows: int) -> str:
    """``maintenance_work_mem`` for an HNSW graph of ``rows`` 384-wide vectors to fit."""
    megabytes = max(64, -(-rows * (4 * DIM + 800) // (1 << 20)))
    return f"{megabytes}MB"


async def load(servers: Servers, pool: Pool, plans, args) -> dict[str, Any]:
    runtime = build_runtime(servers.settings)
    database = runtime.database
    await database.migrate()
    if not args.hnsw_during_load:
        async with database.owner_connection() as connection:
            await connection.execute(text(f"DROP INDEX IF EXISTS {width_index_name(DIM)}"))
    print(f"  loading {sum(n for p in plans for _, n in p):,} chunks, {args.writers} writers")
    started = time.perf_counter()
    cpu = (time.process_time(), cpu_seconds(servers.postmaster))
    loaded = await load_rows(runtime, pool, plans, args.seed, args.writers)
    rows_seconds = time.perf_counter() - started
    figures: dict[str, Any] = {
        "loaded_chunks": loaded,
        "rows_seconds": round(rows_seconds, 1),
        "rows_cpu_loader": round(time.process_time() - cpu[0], 1),
        "rows_cpu_postgres": round(cpu_seconds(servers.postmaster) - cpu[1], 1),
        "writers": args.writers,
    }
    if not args.hnsw_during_load:
        memory = graph_memory(loaded)
        owner_sql(servers.owner_url, f"ALTER SYSTEM SET maintenance_work_mem = '{memory}'")
        owner_sql(servers.owner_url, "SELECT pg_reload_conf()")
        began = time.perf_counter()
        await database.migrate()  # builds the missing width index, concurrently
        figures["index_seconds"] = round(time.perf_counter() - began, 1)
        figures["maintenance_work_mem"] = memory
        log = (servers.postgres.data_dir / "log").read_text(errors="replace")
        figures["graph_spilled"] = "no longer fits into maintenance_work_mem" in log
    began = time.perf_counter()
    owner_sql(servers.owner_url, "VACUUM (ANALYZE) ragsage_chunks")
    figures["analyze_seconds"] = round(time.perf_counter() - began, 1)
    figures["load_seconds"] = round(time.perf_counter() - started, 1)
    await runtime.aclose()
    return figures


def print_load(figures: dict[str, Any], reused: bool) -> None:
    how = "reused from an earlier run" if reused else "this run"
    total = figures["load_seconds"]
    print(f"load ({how}): {figures['loaded_chunks']:,} chunks in {total:,.0f} s")
    rows = figures["rows_seconds"]
    print(
        f"  rows through the store: {rows:,.0f} s "
        f"({figures['loaded_chunks'] / rows:,.0f} chunks/s, {figures['writers']} writers); "
        f"CPU: loader {figures['rows_cpu_loader']:,.0f} s, "
        f"Postgres {figures['rows_cpu_postgres']:,.0f} s"
    )
    if "index_seconds" in figures:
        spilled = ", graph spilled past it" if figures.get("graph_spilled") else ", graph fit"
        print(
            f"  HNSW build by Database.migrate: {figures['index_seconds']:,.0f} s "
            f"(maintenance_work_mem {figures['maintenance_work_mem']}{spilled})"
        )
    else:
        print("  HNSW index maintained during the load (--hnsw-during-load)")
    print(
        f"  VACUUM (ANALYZE): {figures['analyze_seconds']:.1f} s; whole load "
        f"{figures['loaded_chunks'] / total:,.0f} chunks/s"
    )


# ---------------------------------------------------------------- the queries


async def sample_texts(database, scope: Scope, seed: int, count: int = 4000) -> list[str]:
    async with database.session(scope) as session:
        rows = await session.scalars(
            text(
                "SELECT c.text FROM ragsage_chunks c WHERE c.namespace = :namespace "
                f"AND c.generation = {NAMESPACE_ACTIVE_GENERATION} "
                "ORDER BY md5(c.document_id || ':' || c.ordinal || :seed) LIMIT :n"
            ),
            {"seed": str(seed), "n": count, "namespace": scope.namespace},
        )
        return list(rows)


def plain(words: list[str]) -> str:
    kept = [w.replace('"', "").lstrip("-") for w in words]
    return " ".join(w for w in kept if w)


def sampled_queries(texts: list[str], count: int, rng: random.Random) -> list[str]:
    """5-12 consecutive words of a sentence of a random chunk."""
    found: list[str] = []
    while len(found) < count:
        body = rng.choice(texts)
        sentences = [s.split() for s in _SENTENCE_END.split(body) if len(s.split()) >= 5]
        words = rng.choice(sentences) if sentences else body.split()
        length = rng.randint(5, 12)
        start = rng.randrange(max(1, len(words) - length + 1))
        query = plain(words[start : start + length])
        if len(query.split()) >= 3:
            found.append(query)
    return found


def common_queries(texts: list[str], count: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """3-4 of the tenant's 20 most widespread words (stop words out); and those words."""
    spread = Counter(
        word
        for body in texts
        for word in set(content_words(body))
        if len(word) > 2 and word.isalpha()
    )
    top = [word for word, _ in spread.most_common(20)]
    return [" ".join(rng.sample(top, rng.randint(3, 4))) for _ in range(count)], top


# ---------------------------------------------------------------- in process


async def search(runtime: Runtime, scope: Scope, query: str, options: RetrievalOptions) -> int:
    found = await runtime.with_engine(scope, lambda engine: engine.search(scope, query, options))
    return len(found.hits)


async def interleaved(runtime: Runtime, scope: Scope, queries: list[str]) -> dict[str, list]:
    """Latency (ms) and result count of each mode per query, modes rotated per query."""
    names = list(MODES)
    for query in queries[:WARMUPS]:
        for name in names:
            await search(runtime, scope, query, MODES[name])
    results: dict[str, list] = {name: [] for name in names}
    for number, query in enumerate(queries):
        for name in names[number % 3 :] + names[: number % 3]:
            started = time.perf_counter()
            hits = await search(runtime, scope, query, MODES[name])
            results[name].append(((time.perf_counter() - started) * 1000, hits))
    return results


async def exact_distances(database, scope: Scope, literal: str) -> list[float]:
    async with database.session(scope) as session:
        await session.execute(text("SET LOCAL enable_indexscan = off"))
        rows = await session.scalars(
            text(
                f"SELECT c.embedding::vector({DIM}) <=> CAST(:q AS vector({DIM})) AS d "
                "FROM ragsage_chunks c WHERE c.namespace = :namespace "
                f"AND c.generation = {NAMESPACE_ACTIVE_GENERATION} "
                f"AND c.embedding_dim = {DIM} ORDER BY d LIMIT {TOP_K}"
            ),
            {"q": literal, "namespace": scope.namespace},
        )
        return [float(d) for d in rows]


async def recall(runtime: Runtime, scope: Scope, queries: list[str]) -> str:
    """Mean recall@10 of the store's dense search, and the path it took (exact or walk).

    A result no farther than the exact tenth nearest counts as a hit (ties).
    """
    store = runtime.stores()[0]
    shares = []
    for query in queries:
        (vector,) = await runtime.embedder.embed([query], input_type="query")
        found = await store.search(scope, tuple(vector), k=TOP_K)
        truth = await exact_distances(
            runtime.database, scope, "[" + ",".join(map(str, vector)) + "]"
        )
        if not truth:
            continue
        bound = truth[-1] + 1e-6
        hits = sum(1 for hit in found if 1.0 - hit.score <= bound)
        shares.append(min(hits, len(truth)) / len(truth))
    path = store.paths.path(scope.namespace, None)
    return f"{statistics.mean(shares) if shares else float('nan'):.3f} ({path})"


@dataclass
class Tenant:
    label: str
    rank: int
    size: int
    queries: dict[str, list[str]]
    scope: Scope

    @property
    def name(self) -> str:
        return tenant_name(self.rank)


async def in_process(settings: Settings, tenants: list[Tenant], recall_queries: int) -> None:
    runtime = build_runtime(settings)
    print("\nin process (QueryEngine.search via Runtime.with_engine), top 10, ms p50 / p95 / p99:")
    print(
        f"  {'tenant':<28} {'queries':<8} {'hybrid':>19}  {'dense':>19}  {'keyword':>19}  recall@10"
    )
    for tenant in tenants:
        for kind, queries in tenant.queries.items():
            results = await interleaved(runtime, tenant.scope, queries)
            cells = "  ".join(f"{triple([t for t, _ in results[m]]):>19}" for m in MODES)
            shares = await recall(runtime, tenant.scope, queries[:recall_queries])
            print(f"  {tenant.label:<28} {kind:<8} {cells}  {shares}", flush=True)
    await runtime.aclose()


async def bound_search(settings: Settings, bound: Tenant, largest: int) -> None:
    runtime = build_runtime(settings)
    scope = bound.scope
    results = await interleaved(runtime, scope, bound.queries["sampled"])
    print(
        f"\nkey bound to group:sales on {scope.namespace}: reads {bound.size:,} of its "
        f"{largest:,} chunks ({bound.size / largest:.1%}); sampled queries from those, in process "
        "(keyword search returns only chunks sharing a term with the query):"
    )
    for mode, values in results.items():
        counts = Counter(hits for _, hits in values)
        full = counts.get(TOP_K, 0)
        short = ", ".join(f"{n} results x{c}" for n, c in sorted(counts.items()) if n != TOP_K)
        print(
            f"  {mode:<8} p50/p95/p99 {triple([t for t, _ in values])} ms; top_k={TOP_K} kept in "
            f"{full} of {len(values)} searches{'; ' + short if short else ''}"
        )
    await runtime.aclose()


# ---------------------------------------------------------------- one more document


async def ingest_one(
    runtime: Runtime, scope: Scope, doc: PoolDoc, texts: list[str]
) -> tuple[float, float]:
    """Embed and store one document as the worker's final write does; then delete it."""
    started = time.perf_counter()
    vectors = await runtime.embedder.embed([f"{Path(doc.name).name}\n\n{b}" for b in texts])
    embedded = time.perf_counter()
    document, rows = records(scope.namespace, doc, texts, vectors)
    async with runtime.database.session(scope) as session:
        chunk_store, _, document_store = runtime.stores(session)
        await chunk_store.upsert(scope, rows)
        await document_store.save(scope, document, [])
    stored = time.perf_counter()
    await runtime.database.refresh_statistics()
    async with runtime.database.session(scope) as session:
        await delete_document(session, document.id)
    return (embedded - started) * 1000, (stored - embedded) * 1000


async def one_more(settings: Settings, pool: Pool, plans, tenants: list[Tenant], seed: int) -> None:
    runtime = build_runtime(settings)
    rng = random.Random(f"{seed}:one-more")
    print(
        "\none more document: embedded, then written in one transaction (upsert + save); "
        "deleted after"
    )
    for tenant in (tenants[-1], tenants[0]):
        held = {index for index, _ in plans[tenant.rank - 1]}
        spare = [i for i, d in enumerate(pool.docs) if i not in held and 10 <= d.chunks <= 60]
        timings = []
        for index in rng.sample(spare, min(5, len(spare))):
            doc = pool.docs[index]
            embed_ms, store_ms = await ingest_one(runtime, tenant.scope, doc, pool.texts(doc))
            timings.append((doc.chunks, embed_ms, store_ms))
        detail = ", ".join(f"{n} chunks {s:.0f} ms" for n, _, s in timings)
        print(
            f"  into {tenant.label:<28} store median "
            f"{statistics.median(s for *_, s in timings):6.1f} ms, embed median "
            f"{statistics.median(e for _, e, _ in timings):5.1f} ms ({detail})"
        )
    await runtime.aclose()


# ---------------------------------------------------------------- HTTP


def cpu_seconds(pid: int) -> float:
    """CPU seconds of a process, the children it reaped, and its live descendants."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0.0
    own = sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(int(child)) for child in children)


def fire(url: str, key: str, queries: list[str], body: dict, clients: int, total: int):
    """Latencies (ms), wall seconds and result counts of ``total`` searches from ``clients``."""
    batch = [queries[i % len(queries)] for i in range(total)]
    return api_search.fire(url, key, batch, clients, body)


async def new_keys(settings: Settings, tenants: list[Tenant]) -> dict[str, str]:
    runtime = build_runtime(settings)
    keys = {}
    for tenant in tenants:
        scope = Scope(tenant.name)
        async with runtime.database.session(scope) as session:
            principals = sorted(tenant.scope.principals or ())
            made = await create_key(session, scope, Role.READ, "scale bench", principals)
            keys[tenant.label] = made.key
    await runtime.aclose()
    return keys


def over_http(servers: Servers, tenants: list[Tenant], bound: Tenant, queries: int) -> None:
    keys = asyncio.run(new_keys(servers.settings, [*tenants, bound]))
    server, url = serve_api(servers.settings, servers.directory / "api.log")
    try:
        fire(url, keys[tenants[0].label], tenants[0].queries["sampled"], {"top_k": TOP_K}, 4, 40)
        print("\nHTTP POST /v1/search, one client, top 10, ms p50 / p95 / p99:")
        print(f"  {'tenant':<28} {'queries':<8} {'hybrid':>19}  {'dense':>19}  {'keyword':>19}")
        for tenant in [*tenants, bound]:
            for kind, batch in tenant.queries.items():
                cells = []
                for options in MODES.values():
                    body = {"top_k": TOP_K, "hybrid_alpha": options.hybrid_alpha}
                    latencies, _, _ = fire(url, keys[tenant.label], batch, body, 1, len(batch))
                    cells.append(f"{triple(latencies):>19}")
                print(f"  {tenant.label:<28} {kind:<8} {'  '.join(cells)}", flush=True)
        print("\nHTTP hybrid, sampled queries, concurrent clients (API: gunicorn 2 x 8 threads):")
        for tenant in tenants:
            for clients in (8, 32):
                total = max(queries, 20 * clients)
                before = (
                    cpu_seconds(server.pid),
                    cpu_seconds(servers.postmaster),
                    time.process_time(),
                )
                latencies, wall, _ = fire(
                    url,
                    keys[tenant.label],
                    tenant.queries["sampled"],
                    {"top_k": TOP_K},
                    clients,
                    total,
                )
                api = cpu_seconds(server.pid) - before[0]
                database = cpu_seconds(servers.postmaster) - before[1]
                client = time.process_time() - before[2]
                print(
                    f"  {tenant.label:<28} x{clients:<3} {total / wall:6.1f} req/s  p50/p95/p99 "
                    f"{triple(latencies)} ms; CPU over {wall:.1f} s: API {api:.1f} s, Postgres "
                    f"{database:.1f} s, clients {client:.1f} s "
                    f"({(api + database + client) / wall:.2f} cores)",
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait(30)


# ---------------------------------------------------------------- size and memory


def sizes(owner_url: str) -> None:
    rows = owner_sql(
        owner_url,
        "SELECT c.relname, a.amname, pg_relation_size(i.indexrelid) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
        "WHERE i.indrelid = 'ragsage_chunks'::regclass ORDER BY 3 DESC",
    )
    (heap, toast, total, database) = owner_sql(
        owner_url,
        "SELECT pg_relation_size('ragsage_chunks'), "
        "coalesce(pg_total_relation_size(nullif(reltoastrelid, 0)), 0), "
        "pg_total_relation_size('ragsage_chunks'), pg_database_size(current_database()) "
        "FROM pg_class WHERE oid = 'ragsage_chunks'::regclass",
    )[0]
    count = owner_sql(owner_url, "SELECT count(*) FROM ragsage_chunks")[0][0]
    by_kind: Counter[str] = Counter()
    for _, method, size in rows:
        by_kind[method if method in ("hnsw", "gin") else "other"] += size
    mb = 1 << 20
    print(
        f"\non disk: ragsage_chunks {count:,} rows, {total / mb:,.0f} MB with its indexes and TOAST"
    )
    print(
        f"  heap {heap / mb:,.0f} MB, TOAST {toast / mb:,.0f} MB, "
        f"HNSW {by_kind['hnsw'] / mb:,.0f} MB, GIN {by_kind['gin'] / mb:,.0f} MB, "
        f"other indexes {by_kind['other'] / mb:,.0f} MB; "
        f"whole database {database / mb:,.0f} MB ({total / max(count, 1):,.0f} bytes a chunk)"
    )
    for name, method, size in rows:
        if size >= mb:
            print(f"    {name:<48} {method:<6} {size / mb:8,.1f} MB")


def memory(servers: Servers) -> None:
    pids = [servers.postmaster]
    children = Path(f"/proc/{pids[0]}/task/{pids[0]}/children")
    pids += [int(pid) for pid in children.read_text().split()]
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    settings = dict(
        owner_sql(
            servers.owner_url,
            "SELECT name, current_setting(name) FROM pg_settings WHERE name IN "
            "('shared_buffers', 'maintenance_work_mem', 'work_mem', 'max_connections')",
        )
    )
    print(
        f"\nPostgres memory: {len(pids)} processes, RSS {rss / 1024:,.0f} MB summed (shared pages "
        f"counted in each), PSS {pss / 1024:,.0f} MB; "
        + ", ".join(f"{k} {v}" for k, v in sorted(settings.items()))
    )


# ---------------------------------------------------------------- the run


def chosen_tenants(sizes_: list[int]) -> list[tuple[str, int]]:
    tenants = len(sizes_)
    small = max(1, tenants // 2)
    mid = max(2, round(tenants ** (1 / 3))) if tenants > 2 else 1
    picked = [("small", small), ("mid-size", mid), ("largest", 1)]
    return [(f"{label} {tenant_name(rank)} ({sizes_[rank - 1]:,})", rank) for label, rank in picked]


async def make_queries(settings: Settings, sizes_: list[int], count: int, seed: int):
    runtime = build_runtime(settings)
    tenants = []
    for label, rank in chosen_tenants(sizes_):
        scope = Scope(tenant_name(rank))
        texts = await sample_texts(runtime.database, scope, seed)
        rng = random.Random(f"{seed}:{rank}")
        common, top = common_queries(texts, count, rng)
        queries = {"sampled": sampled_queries(texts, count, rng), "common": common}
        tenants.append(Tenant(label, rank, sizes_[rank - 1], queries, scope))
        print(f"  {label}: common words {', '.join(top[:8])} ...")
    largest = tenants[-1]
    scope = Scope(largest.name, SALES)
    readable = await sample_texts(runtime.database, scope, seed)
    async with runtime.database.session(scope) as session:
        held = await session.scalar(
            text(
                "SELECT count(*) FROM ragsage_chunks c WHERE c.namespace = :namespace "
                f"AND c.generation = {NAMESPACE_ACTIVE_GENERATION}"
            ),
            {"namespace": scope.namespace},
        )
    rng = random.Random(f"{seed}:sales")
    bound = Tenant(
        f"bound {largest.name} (sales)",
        1,
        int(held or 0),
        {"sampled": sampled_queries(readable, count, rng)},
        scope,
    )
    await runtime.aclose()
    return tenants, bound


def marker_params(args, pool: Pool, sizes_: list[int]) -> dict[str, Any]:
    return {
        "version": scale_corpus.VERSION,
        "layout": 3,
        "chunks": args.chunks,
        "tenants": args.tenants,
        "seed": args.seed,
        "hnsw_during_load": args.hnsw_during_load,
        "pool_chunks": pool.total,
        "corpus_chunks": sum(sizes_),
    }


def prepare(args, servers: Servers, pool: Pool, plans, params: dict[str, Any]) -> None:
    marker = args.data_dir / MARKER
    recorded = json.loads(marker.read_text()) if marker.exists() else {}
    if args.reuse and recorded.get("params") == params:
        asyncio.run(migrate_only(servers.settings))
        print_load(recorded["figures"], reused=True)
        return
    figures = asyncio.run(load(servers, pool, plans, args))
    marker.write_text(json.dumps({"params": params, "figures": figures}, indent=1))
    print_load(figures, reused=False)


async def own_graphs(settings: Settings) -> None:
    """``ragsage graphs``' round: the namespaces of ``graph_rows`` chunks get their own graph."""
    runtime = build_runtime(settings)
    began = time.perf_counter()
    done = await maintain_graphs(runtime.database)
    took = time.perf_counter() - began
    await runtime.aclose()
    if done is None:
        raise SystemExit("another `ragsage graphs` holds the lock")
    built, kept = done.of("built"), done.of("kept")
    failed, dropped = done.of("failed"), done.of("dropped")
    print(
        f"graphs of their own (namespaces of {settings.graph_rows:,} chunks or more): "
        f"{len(built)} built in {took:,.0f} s, {len(kept)} kept, {len(dropped)} dropped"
        + (f", {len(failed)} FAILED: {failed[0].error}" if failed else "")
    )
    for change in built:
        print(
            f"  {change.namespace}: {change.chunks:,} chunks, {change.seconds:,.1f} s, "
            f"{change.size_bytes / 2**20:,.0f} MB"
        )


async def migrate_only(settings: Settings) -> None:
    runtime = build_runtime(settings)
    await runtime.database.migrate()
    await runtime.aclose()


def fresh_data_dir(args, params: dict[str, Any]) -> None:
    """Keep the directory when it may be reused; otherwise start it again (ours only)."""
    marker = args.data_dir / MARKER
    pg = args.data_dir / "pg"
    if args.reuse and marker.exists() and json.loads(marker.read_text()).get("params") == params:
        return
    if pg.exists():
        if not (marker.exists() or (args.data_dir / ".ragsage-scale").exists()):
            raise SystemExit(
                f"{args.data_dir} was not made by this bench; choose another --data-dir"
            )
        print(f"  starting {pg} again (no finished load with these parameters)")
        shutil.rmtree(pg)
        marker.unlink(missing_ok=True)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    (args.data_dir / ".ragsage-scale").write_text("made by bench/scale.py\n")


def timed(label: str, call: Callable[[], _T]) -> _T:
    started = time.perf_counter()
    result = call()
    print(f"  ({label} took {time.perf_counter() - started:,.0f} s)", flush=True)
    return result


def measure(args, servers: Servers, pool: Pool, plans, sizes_: list[int]) -> None:
    settings = servers.settings
    tenants, bound = timed(
        "choosing queries",
        lambda: asyncio.run(make_queries(settings, sizes_, args.queries, args.seed)),
    )
    timed(
        "in process, with recall",
        lambda: asyncio.run(in_process(settings, tenants, args.recall_queries)),
    )
    timed("bound key", lambda: asyncio.run(bound_search(settings, bound, sizes_[0])))
    timed(
        "one more document",
        lambda: asyncio.run(one_more(settings, pool, plans, tenants, args.seed)),
    )
    if not args.no_http:
        timed("HTTP", lambda: over_http(servers, tenants, bound, args.queries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200, help="per tenant and kind")
    parser.add_argument("--seed", type=int, default=53)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--reuse", action="store_true", help="skip the load if it is there")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--hnsw-during-load", action="store_true")
    parser.add_argument("--shared-buffers", default="4GB")
    parser.add_argument("--load-only", action="store_true", help="stop after the load")
    parser.add_argument(
        "--graph-rows",
        type=int,
        default=Settings().graph_rows,
        help="a tenant of this many chunks gets an HNSW graph of its own (0: none, and "
        "those built by an earlier run are dropped)",
    )
    parser.add_argument(
        "--recall-queries", type=int, default=100, help="per tenant and kind (exact scans)"
    )
    args = parser.parse_args()
    args.data_dir = (args.data_dir or scale_corpus.CACHE / f"pg-{args.chunks}").expanduser()
    sizes_ = scale_corpus.tenant_sizes(args.chunks, args.tenants)
    print(
        f"corpus: {sum(sizes_):,} chunks over {len(sizes_)} tenants; largest {sizes_[0]:,}, "
        f"rank 2 {sizes_[1]:,}, median {sorted(sizes_)[len(sizes_) // 2]:,}, "
        f"smallest {sizes_[-1]:,}"
    )
    pool = scale_corpus.build_pool(args.seed, wanted=sum(sizes_))
    print(
        "  pool: "
        + ", ".join(f"{s} {c:,}" for s, (_, c) in pool.sources.items())
        + f" distinct chunks ({pool.total:,})"
        + (f"; missing: {', '.join(pool.missing)}" if pool.missing else "")
    )
    plans = scale_corpus.assign(pool, sizes_, args.seed)
    params = marker_params(args, pool, sizes_)
    fresh_data_dir(args, params)
    with tempfile.TemporaryDirectory() as directory:
        servers = start_servers(
            args.data_dir / "pg", Path(directory) / "redis", args.shared_buffers
        )
        try:
            prepare(args, servers, pool, plans, params)
            if args.graph_rows != servers.settings.graph_rows:
                servers.settings = dataclasses.replace(servers.settings, graph_rows=args.graph_rows)
            asyncio.run(own_graphs(servers.settings))
            if not args.load_only:
                measure(args, servers, pool, plans, sizes_)
            sizes(servers.owner_url)
            memory(servers)
        finally:
            servers.redis.stop()
            servers.postgres.stop()


if __name__ == "__main__":
    main()
