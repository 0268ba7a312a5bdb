"""Searches right after a bulk load plan as well as after autovacuum's next pass."""

from __future__ import annotations

import math
import random

from sqlalchemy import text

from ragsage.adapters.postgres import Database, PgDocumentStore, PgVectorStore
from ragsage.adapters.postgres.dense_statements import dense_statement, vector_literal
from ragsage.adapters.postgres.isolation import isolation_preamble
from ragsage.core.chunks import Chunk, EmbeddedChunk
from ragsage.core.documents import Document
from ragsage.core.scopes import Scope

DIM = 128
MODEL = "test-128"
BULK = Scope("bulk")


def unit(rng: random.Random) -> tuple[float, ...]:
    values = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    norm = math.sqrt(sum(v * v for v in values))
    return tuple(v / norm for v in values)


async def load(db: Database, first: int, documents: int, *, own_transaction: bool) -> None:
    """``documents`` documents of 100 chunks; through the store's own transactions or not."""
    rng = random.Random(first)
    for number in range(first, first + documents):
        document = Document(
            id=f"doc{number}", content_hash=f"h{number}", title="t", source=f"{number}.md"
        )
        records = [
            EmbeddedChunk(
                Chunk(
                    id=f"{document.id}:{ordinal}",
                    document_id=document.id,
                    ordinal=ordinal,
                    text=f"paragraph {ordinal} of document {number} " * 8,
                    embed_text=f"paragraph {ordinal}",
                    source=document.source,
                ),
                unit(rng),
            )
            for ordinal in range(100)
        ]
        async with db.session(BULK) as session:
            await PgDocumentStore(session).save(BULK, document, [])
            if not own_transaction:
                store = PgVectorStore(session, embedding_model=MODEL, embedding_dim=DIM)
                await store.upsert(BULK, records)
        if own_transaction:
            store = PgVectorStore(db, embedding_model=MODEL, embedding_dim=DIM)
            await store.upsert(BULK, records)


async def table_figures(db: Database) -> tuple[float, int]:
    """(the planner's row count, rows with column statistics) for the chunk table."""
    async with db.owner_connection() as connection:
        rows = await connection.scalar(
            text("SELECT reltuples FROM pg_class WHERE relname = 'ragsage_chunks'")
        )
        columns = await connection.scalar(
            text("SELECT count(*) FROM pg_stats WHERE tablename = 'ragsage_chunks'")
        )
    return float(rows), int(columns)


async def dense_plan(db: Database) -> str:
    """EXPLAIN of the dense search as the store sends it: app role, RLS on."""
    sql, params = dense_statement(DIM, None, namespace=BULK.namespace)
    params.update(query=vector_literal(unit(random.Random(7))), k=10, generation=None)
    preamble = isolation_preamble(db.config, BULK)[0]
    async with db.engine.connect() as connection:
        await connection.exec_driver_sql(preamble.sql)
        rows = await connection.execute(text(f"EXPLAIN {sql}"), params)
        plan = "\n".join(str(row[0]) for row in rows)
        await connection.rollback()
    return plan


async def test_after_a_bulk_load_dense_search_walks_the_graph(db: Database) -> None:
    async with db.owner_connection() as connection:
        await connection.execute(
            text("ALTER TABLE ragsage_chunks SET (autovacuum_enabled = false)")
        )
    # Written inside callers' transactions, nothing refreshes the statistics:
    # the planner takes the namespace for a handful of rows and sorts them all.
    await load(db, 0, 30, own_transaction=False)
    assert await table_figures(db) == (-1.0, 0)
    assert f"Index Scan using ragsage_chunks_embedding_{DIM}" not in await dense_plan(db)
    # The next write through a store's own transaction analyzes the table.
    await load(db, 30, 1, own_transaction=True)
    assert (await table_figures(db))[0] >= 3000
    plan = await dense_plan(db)
    assert f"Index Scan using ragsage_chunks_embedding_{DIM}" in plan, plan


async def test_the_writer_that_grows_the_table_gives_the_planner_statistics(
    db: Database,
) -> None:
    async with db.owner_connection() as connection:
        await connection.execute(
            text("ALTER TABLE ragsage_chunks SET (autovacuum_enabled = false)")
        )
    await load(db, 0, 1, own_transaction=True)
    # 100 rows fill too few pages to be worth it: autovacuum's business.
    assert await table_figures(db) == (-1.0, 0)
    await load(db, 1, 9, own_transaction=True)
    rows, columns = await table_figures(db)
    assert rows >= 600 and columns > 0  # analyzed once the table passed 64 pages
    assert await db.refresh_statistics() is False  # nothing new since
    await load(db, 10, 10, own_transaction=True)
    rows, _ = await table_figures(db)
    assert rows >= 1200  # doubled, so analyzed again
    await load(db, 20, 1, own_transaction=True)
    assert (await table_figures(db))[0] == rows  # a tenth more is left to autovacuum
