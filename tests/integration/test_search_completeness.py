"""A search returns every result asked for: a small namespace beside big ones included."""

from __future__ import annotations

import math
import random

from sqlalchemy import text

from ragsage.adapters.postgres import Database, PgDocumentStore, PgVectorStore
from ragsage.adapters.postgres.config import PostgresConfig
from ragsage.adapters.postgres.dense_function import dense_function_signature
from ragsage.adapters.postgres.dense_statements import DensePaths
from ragsage.core.chunks import Chunk, EmbeddedChunk
from ragsage.core.documents import Document
from ragsage.core.scopes import Scope

DIM = 16
MODEL = "test-16"
PER_DOCUMENT = 100


def unit(rng: random.Random) -> tuple[float, ...]:
    values = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    norm = math.sqrt(sum(v * v for v in values))
    return tuple(v / norm for v in values)


async def load(
    db: Database, scope: Scope, rows: int, rng: random.Random
) -> dict[str, tuple[float, ...]]:
    """``rows`` chunks of random unit vectors; their vectors by chunk id."""
    vectors: dict[str, tuple[float, ...]] = {}
    for first in range(0, rows, PER_DOCUMENT):
        document = Document(
            id=f"{scope.namespace}-{first}",
            content_hash=f"h{first}",
            title="t",
            source=f"{scope.namespace}-{first}.md",
        )
        records = []
        for ordinal in range(min(PER_DOCUMENT, rows - first)):
            chunk = Chunk(
                id=f"{document.id}:{ordinal}",
                document_id=document.id,
                ordinal=ordinal,
                text=f"row {first + ordinal}",
                embed_text=f"row {first + ordinal}",
                source=document.source,
            )
            vector = unit(rng)
            vectors[chunk.id] = vector
            records.append(EmbeddedChunk(chunk, vector))
        async with db.session(scope) as session:
            await PgDocumentStore(session).save(scope, document, [])
            await PgVectorStore(session, embedding_model=MODEL, embedding_dim=DIM).upsert(
                scope, records
            )
    return vectors


def nearest(vectors: dict[str, tuple[float, ...]], query: tuple[float, ...], k: int) -> list[str]:
    def cosine(chunk_id: str) -> float:
        return sum(a * b for a, b in zip(vectors[chunk_id], query, strict=True))

    return sorted(vectors, key=lambda chunk_id: (-cosine(chunk_id), chunk_id))[:k]


async def test_a_small_namespace_beside_big_ones_gets_top_k(
    db: Database, pg_config: PostgresConfig
) -> None:
    rng = random.Random(20)
    big, medium, small = Scope("big"), Scope("medium"), Scope("small")
    await load(db, big, 4000, rng)
    medium_vectors = await load(db, medium, 1200, rng)
    small_vectors = await load(db, small, 30, rng)
    async with db.owner_connection() as connection:
        await connection.execute(text("ANALYZE ragsage_chunks"))
        name = await connection.scalar(text("SELECT current_database()"))
        # The graph walk may look at 50 rows at most: far fewer than the big
        # namespaces put in the way of the small ones.
        await connection.execute(text(f'ALTER DATABASE "{name}" SET hnsw.max_scan_tuples = 50'))
        # At a few thousand rows the planner would rather sort the namespace's rows
        # than walk the graph; past a hundred thousand it walks.  Make it walk here.
        await connection.execute(text(f'ALTER DATABASE "{name}" SET enable_sort = off'))
    fresh = Database(pg_config)  # new connections, which read the lowered budget
    try:
        async with fresh.session(small) as session:
            budget = await session.scalar(text("SHOW hnsw.max_scan_tuples"))
        assert budget == "50"
        decided: dict[Scope, str] = {}
        for scope, vectors in ((small, small_vectors), (medium, medium_vectors)):
            store = PgVectorStore(fresh, embedding_model=MODEL, embedding_dim=DIM)
            for _ in range(5):
                query = unit(rng)
                found = await store.search(scope, query, k=20)
                assert len(found) == 20, scope
                assert {c.chunk.document_id.split("-")[0] for c in found} == {scope.namespace}
                truth = nearest(vectors, query, 20)
                if scope == small:  # ranked exactly: the true top 20, in order
                    assert [c.chunk.id for c in found] == truth
                else:  # a walk cut short is completed exactly, so nothing near is missed
                    assert len({c.chunk.id for c in found} & set(truth)) >= 18
            # The store decided once and then sent the lean statement.
            decided[scope] = store.paths.path(scope.namespace, None)
        assert decided[small] == "exact"
        # A remembered choice that no longer fits (the namespace changed size
        # since) is slower, never short: a walk over the small namespace falls
        # back to the exact ranking, and an exact ranking is exact.
        stale = DensePaths()
        stale.remember(small.namespace, None, "walk")
        stale.remember(medium.namespace, None, "exact" if decided[medium] == "walk" else "walk")
        store = PgVectorStore(fresh, embedding_model=MODEL, embedding_dim=DIM, paths=stale)
        for scope, vectors in ((small, small_vectors), (medium, medium_vectors)):
            query = unit(rng)
            found = await store.search(scope, query, k=20)
            assert [c.chunk.id for c in found] == nearest(vectors, query, 20), scope
        # A namespace with fewer chunks than asked for returns all it has.
        tiny = Scope("tiny")
        await load(db, tiny, 7, rng)
        found = await PgVectorStore(fresh, embedding_model=MODEL, embedding_dim=DIM).search(
            tiny, unit(rng), k=20
        )
        assert len(found) == 7
    finally:
        await fresh.dispose()


async def test_the_width_function_ranks_as_the_statement_does(db: Database) -> None:
    rng = random.Random(7)
    scope, other = Scope("acme"), Scope("globex")
    vectors = await load(db, scope, 1500, rng)
    await load(db, other, 1500, rng)
    for path_is_small in (False, True):
        planned, by_statement = DensePaths(), DensePaths()
        by_statement.unplanned.add(DIM)
        for paths in (planned, by_statement):
            paths.remember(scope.namespace, None, "exact" if path_is_small else "walk")
        stores = [
            PgVectorStore(db, embedding_model=MODEL, embedding_dim=DIM, paths=paths)
            for paths in (planned, by_statement)
        ]
        for _ in range(5):
            query = unit(rng)
            rankings = [
                [
                    (r.chunk_id, r.score, r.chunk)
                    for r in await s.rank_vectors(scope, query, k=30, rows=5)
                ]
                for s in stores
            ]
            assert rankings[0] == rankings[1]
            assert [row[0] for row in rankings[0]][:5] == nearest(vectors, query, 5)
            assert all(row[2] is not None for row in rankings[0][:5])
            assert all(row[2] is None for row in rankings[0][5:])
        assert planned.unplanned == set()


async def test_a_width_without_its_function_is_searched_by_the_statement(db: Database) -> None:
    rng = random.Random(8)
    scope = Scope("acme")
    vectors = await load(db, scope, 200, rng)
    async with db.owner_connection() as connection:
        await connection.execute(text(f"DROP FUNCTION {dense_function_signature(DIM)}"))
    paths = DensePaths()
    paths.remember(scope.namespace, None, "walk")
    store = PgVectorStore(db, embedding_model=MODEL, embedding_dim=DIM, paths=paths)
    query = unit(rng)
    found = await store.search(scope, query, k=10)
    assert [c.chunk.id for c in found] == nearest(vectors, query, 10)
    assert paths.unplanned == {DIM}
    # Migrating makes it again, and a process started after uses it.
    await db.migrate()
    again = DensePaths()
    again.remember(scope.namespace, None, "walk")
    store = PgVectorStore(db, embedding_model=MODEL, embedding_dim=DIM, paths=again)
    assert [c.chunk.id for c in await store.search(scope, query, k=10)] == [
        c.chunk.id for c in found
    ]
    assert again.unplanned == set()
