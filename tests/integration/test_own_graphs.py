"""A large namespace gets an HNSW graph of its own, searches walk it, and it goes when outgrown."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import text

from ragsage.adapters.postgres import Database, PgVectorStore
from ragsage.adapters.postgres.config import PostgresConfig
from ragsage.adapters.postgres.dense_statements import DensePath, DensePaths
from ragsage.adapters.postgres.graphs import graph_statement, maintain_graphs
from ragsage.adapters.postgres.migrations import width_index_name
from ragsage.cli import main
from ragsage.core.filters import SearchFilters
from ragsage.core.scopes import Scope

from .test_search_completeness import DIM, MODEL, load, nearest, unit

BIG, SMALL = Scope("bigco"), Scope("smallco")


@pytest.fixture
async def graphed(pg_config: PostgresConfig) -> Database:
    """A database whose namespaces of 300 chunks or more get a graph of their own."""
    database = Database(dataclasses.replace(pg_config, graph_rows=300))
    await database.migrate()
    yield database  # type: ignore[misc]
    await database.dispose()


async def graph_scans(database: Database, name: str) -> int:
    async with database.owner_connection() as connection:
        found = await connection.scalar(
            text("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = :name"),
            {"name": name},
        )
    return int(found or 0)


async def scans_of(
    graphed: Database,
    name: str,
    search: Callable[[PgVectorStore], Awaitable[None]],
    *,
    remember: DensePath | None = None,
) -> int:
    """How many times ``search`` walked the graph ``name``.

    The searches run on pools of their own, closed at the end: a backend
    reports its index scans when it exits (an idle one may wait 10 s).
    ``remember`` starts every namespace's path as if a search had chosen it.
    """
    before = await graph_scans(graphed, name)
    config = graphed.config
    searching = Database(config)
    paths = DensePaths(graph_ef_search=400, hnsw_type=config.hnsw_type)
    if remember is not None:
        for scope in (BIG, SMALL):
            paths.remember(scope.namespace, None, remember)
    try:
        await search(
            PgVectorStore(searching, embedding_model=MODEL, embedding_dim=DIM, paths=paths)
        )
    finally:
        await searching.dispose()
    deadline = time.monotonic() + 3
    while (after := await graph_scans(graphed, name)) == before and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return after - before


async def test_a_large_namespace_walks_a_graph_of_its_own(graphed: Database) -> None:
    rng = random.Random(31)
    big = await load(graphed, BIG, 400, rng)
    small = await load(graphed, SMALL, 200, rng)
    first = await maintain_graphs(graphed)
    assert first is not None
    [built] = first.of("built")
    assert (built.namespace, built.width, built.chunks) == (BIG.namespace, DIM, 400)
    assert built.size_bytes > 0 and not first.of("failed")
    # A second round finds nothing to do.
    again = await maintain_graphs(graphed)
    assert again is not None and [c.action for c in again.changes] == ["kept"]

    async def unfiltered(store: PgVectorStore) -> None:
        # The first search decides and sends the statement, the rest call the function.
        for _ in range(4):
            query = unit(rng)
            found = await store.search(BIG, query, k=10)
            assert [c.chunk.id for c in found] == nearest(big, query, 10)
        assert store.paths.path(BIG.namespace, None) == "own"

    assert await scans_of(graphed, built.name, unfiltered) == 4

    async def filtered(store: PgVectorStore) -> None:
        # A filtered search always sends the statement, which walks the same graph.
        admitted = {k: v for k, v in big.items() if k.split(":")[0] in {"bigco-0", "bigco-200"}}
        sources = frozenset({"bigco-0.md", "bigco-200.md"})
        for _ in range(2):
            query = unit(rng)
            found = await store.search(BIG, query, k=10, filters=SearchFilters(sources=sources))
            assert [c.chunk.id for c in found] == nearest(admitted, query, 10)

    assert await scans_of(graphed, built.name, filtered) == 2

    async def elsewhere(store: PgVectorStore) -> None:
        for _ in range(3):
            query = unit(rng)
            found = await store.search(SMALL, query, k=10)
            assert [c.chunk.id for c in found] == nearest(small, query, 10)
        assert store.paths.path(SMALL.namespace, None) != "own"

    # The small namespace has no graph and never walks the big one's.
    assert await scans_of(graphed, built.name, elsewhere) == 0


async def test_an_outgrown_graph_is_dropped_and_searches_go_on(graphed: Database) -> None:
    rng = random.Random(32)
    big = await load(graphed, BIG, 400, rng)
    done = await maintain_graphs(graphed)
    assert done is not None
    [built] = done.of("built")
    paths = DensePaths(graph_ef_search=400)
    store = PgVectorStore(graphed, embedding_model=MODEL, embedding_dim=DIM, paths=paths)
    await store.search(BIG, unit(rng), k=5)
    assert paths.path(BIG.namespace, None) == "own"
    # Down to 200 chunks: still above half the threshold, so the graph stays.
    for document in ("bigco-0", "bigco-100"):
        await store.delete(BIG, document)
    kept = await maintain_graphs(graphed)
    assert kept is not None and [c.action for c in kept.changes] == ["kept"]
    # Down to 100: below half, dropped.
    await store.delete(BIG, "bigco-200")
    dropped = await maintain_graphs(graphed)
    assert dropped is not None
    assert [(c.action, c.name) for c in dropped.changes] == [("dropped", built.name)]
    async with graphed.owner_connection() as connection:
        assert await connection.scalar(text("SELECT to_regclass(:n)"), {"n": built.name}) is None
    # The remembered path still names the graph; the search walks the shared one instead.
    remaining = {key: v for key, v in big.items() if key.startswith("bigco-300:")}
    for _ in range(3):
        query = unit(rng)
        found = await store.search(BIG, query, k=10)
        assert [c.chunk.id for c in found] == nearest(remaining, query, 10)


async def test_a_graph_built_with_other_parameters_is_built_again(
    graphed: Database,
) -> None:
    await load(graphed, BIG, 300, random.Random(35))
    first = await maintain_graphs(graphed)
    assert first is not None and [c.action for c in first.changes] == ["built"]
    sparser = Database(dataclasses.replace(graphed.config, graph_m=8, graph_ef_construction=32))
    try:
        again = await maintain_graphs(sparser)
    finally:
        await sparser.dispose()
    assert again is not None and [c.action for c in again.changes] == ["built"]
    assert "m='8', ef_construction='32'" in await index_definition(graphed, again.changes[0].name)


async def test_one_round_at_a_time_and_no_graph_when_turned_off(
    graphed: Database, pg_config: PostgresConfig
) -> None:
    await load(graphed, BIG, 300, random.Random(33))
    async with graphed.owner_autocommit() as holder:
        await holder.execute(text("SELECT pg_advisory_lock(hashtext('ragsage_graphs'))"))
        assert await maintain_graphs(graphed) is None
        await holder.execute(text("SELECT pg_advisory_unlock(hashtext('ragsage_graphs'))"))
    off = Database(dataclasses.replace(pg_config, graph_rows=0))
    try:
        done = await maintain_graphs(off)
        assert done is not None and done.changes == []
    finally:
        await off.dispose()


async def index_definition(database: Database, name: str) -> str:
    async with database.owner_connection() as connection:
        found = await connection.scalar(
            text("SELECT pg_get_indexdef(to_regclass(:name))"), {"name": name}
        )
    return str(found)


async def test_the_shared_graph_may_be_built_in_half_precision(pg_config: PostgresConfig) -> None:
    rng = random.Random(34)
    shared = width_index_name(DIM)
    half = Database(dataclasses.replace(pg_config, hnsw_type="halfvec", graph_rows=0))
    try:
        await half.migrate()
        assert "halfvec_cosine_ops" in await index_definition(half, shared)
        big = await load(half, BIG, 300, rng)

        async def walk(store: PgVectorStore) -> None:
            for _ in range(3):
                query = unit(rng)
                found = await store.search(BIG, query, k=10)
                assert [c.chunk.id for c in found] == nearest(big, query, 10)

        assert await scans_of(half, shared, walk, remember="walk") == 3
    finally:
        await half.dispose()
    # Set back to vector, the next migrate builds the graph again (the table
    # holds vectors: concurrently), and the walks use it.
    full = Database(dataclasses.replace(pg_config, graph_rows=0))
    try:
        await full.migrate()
        assert "vector_cosine_ops" in await index_definition(full, shared)
        assert await scans_of(full, shared, walk, remember="walk") == 3
    finally:
        await full.dispose()


async def test_the_operator_command_builds_and_reports(
    graphed: Database,
    pg_config: PostgresConfig,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await load(graphed, BIG, 300, random.Random(36))
    monkeypatch.setenv("RAGSAGE_DATABASE_URL", pg_config.dsn)
    monkeypatch.setenv("RAGSAGE_GRAPH_ROWS", "300")
    # main runs its own event loop, so it runs beside this test's.
    code = await asyncio.to_thread(main, ["graphs"])
    printed = capsys.readouterr().out
    assert code == 0
    assert printed.startswith("built ragsage_graph_16_") and "for bigco (300 chunks" in printed
    assert await asyncio.to_thread(main, ["graphs"]) == 0
    assert capsys.readouterr().out.startswith("kept ragsage_graph_16_")


def test_a_graph_is_only_written_for_a_real_namespace_and_name() -> None:
    name = "ragsage_graph_16_" + "0" * 20
    assert "namespace = 'acme'" in graph_statement(name, "acme", 16, m=24, ef_construction=200)
    with pytest.raises(ValueError, match="not a namespace"):
        graph_statement(name, "acme'; DROP TABLE x; --", 16, m=24, ef_construction=200)
    with pytest.raises(ValueError, match="not a graph's name"):
        graph_statement("ragsage_chunks", "acme", 16, m=24, ef_construction=200)
