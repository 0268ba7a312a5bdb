from __future__ import annotations

import os
from dataclasses import replace

import pytest
from sqlalchemy import text

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.postgres import (
    LATEST_VERSION,
    MIGRATIONS,
    Database,
    PostgresConfig,
    SchemaMismatch,
    existing_embedding_dim,
    migrate,
    migration_statements,
    purge_namespace,
    schema_version,
)
from ragsage.adapters.postgres.migrations import (
    SERVICE_TABLES,
    STATISTICS_TABLES,
    TENANT_TABLES,
    Migration,
)
from ragsage.core.types import RawSource, Scope
from ragsage.testing import FakeEngineKit

from ..unit.engine.conftest import HANDBOOK
from . import helpers
from .conftest import PostgresServer, as_user
from .schema_snapshot import schema_snapshot

ACME, GLOBEX = Scope("acme"), Scope("globex")


async def test_migrate_is_idempotent(db: Database) -> None:
    assert await db.migrate() == LATEST_VERSION
    assert await db.migrate() == LATEST_VERSION
    async with db.owner_connection() as connection:
        assert await schema_version(connection) == LATEST_VERSION
        assert await existing_embedding_dim(connection) == 256
        tables = set(
            await connection.scalars(
                text("SELECT tablename FROM pg_tables WHERE tablename LIKE 'ragsage_%'")
            )
        )
        forced = set(
            await connection.scalars(
                text(
                    "SELECT relname FROM pg_class WHERE relname LIKE 'ragsage_%' "
                    "AND relkind = 'r' AND relrowsecurity AND relforcerowsecurity"
                )
            )
        )
    assert tables == forced
    assert tables == {"ragsage_schema", *TENANT_TABLES, *SERVICE_TABLES, *STATISTICS_TABLES}


async def test_a_width_mismatch_is_refused_before_any_ddl(
    db: Database, pg_config: PostgresConfig
) -> None:
    narrow = PostgresConfig(dsn=pg_config.dsn, app_dsn=pg_config.app_dsn, embedding_dim=512)
    async with db.owner_connection() as connection:
        with pytest.raises(SchemaMismatch, match="256-dimensional.*embedding_dim is 512"):
            await migrate(connection, narrow)
    async with db.owner_connection() as connection:
        indexes = set(
            await connection.scalars(
                text("SELECT indexname FROM pg_indexes WHERE tablename = 'ragsage_chunks'")
            )
        )
    assert "ragsage_chunks_embedding_256" in indexes
    assert "ragsage_chunks_embedding_512" not in indexes


async def _seed_v1(database: Database) -> None:
    """Rows as a version-1 install wrote them, by raw SQL (today's code writes v2 rows)."""
    vector = "[" + ",".join(["0.0625"] * 256) + "]"
    async with database.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_generations VALUES "
                "('acme', 1, 'ragsage-hashing-256', 256, 'active', now(), now())"
            )
        )
        await session.execute(
            text(
                "INSERT INTO ragsage_documents (namespace, id, content_hash, title, source) "
                "VALUES ('acme', 'doc_old', 'hash-old', 'Old', 'old.md')"
            )
        )
        await session.execute(
            text(
                "INSERT INTO ragsage_chunks (namespace, generation, document_id, ordinal, text, "
                "embed_text, source, embedding_model, embedding_dim, embedding) VALUES "
                "('acme', 1, 'doc_old', 0, 'legacy anvils', 'legacy anvils', 'old.md', "
                "'ragsage-hashing-256', 256, CAST(:v AS vector))"
            ),
            {"v": vector},
        )


async def _check_v2(database: Database) -> None:
    kit = helpers.kit()
    pg = helpers.stores(database, kit)
    document = await pg.documents.get(ACME, "doc_old")
    assert document is not None and document.source == "old.md"
    async with database.session(ACME) as session:
        matched = await session.scalar(
            text("SELECT count(*) FROM ragsage_chunks WHERE lexical @@ 'anvil'::tsquery")
        )
        assert matched == 1
        row = (
            await session.execute(
                text("SELECT external_id, filename, status FROM ragsage_documents")
            )
        ).one()
    assert tuple(row) == ("old.md", "old.md", "ready")


async def _seed_v2(database: Database) -> None:
    """A version-2 install with an upload and its job, written as that version wrote them."""
    from ragsage.core.identity import legacy_document_id_for

    # Ids then hashed the name alone; uploads must keep finding such documents.
    legacy_id = legacy_document_id_for("v2.md")
    async with database.session(ACME) as session:
        for statement in (
            "INSERT INTO ragsage_blobs (namespace, content_hash, data, size_bytes) "
            "VALUES ('acme', 'hash-v2', '# Version two', 13)",
            "INSERT INTO ragsage_documents (namespace, id, external_id, content_hash, title, "
            "source, filename, status) VALUES ('acme', :id, 'v2.md', 'hash-v2', 'v2.md', "
            "'v2.md', 'v2.md', 'queued')",
            "INSERT INTO ragsage_jobs (namespace, id, document_id, kind, state, content_hash, "
            "filename) VALUES ('acme', gen_random_uuid(), :id, 'ingest', 'queued', "
            "'hash-v2', 'v2.md')",
        ):
            await session.execute(text(statement), {"id": legacy_id})


async def _check_v3(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import store
    from ragsage.adapters.postgres.keys import Role, authenticate, create_key

    await database.migrate()  # today's job and key code reads the latest schema
    async with database.session(ACME) as session:
        (job,) = await store.list_jobs(session)
        assert job.filename == "v2.md" and job.state.value == "queued"
        key = await create_key(session, ACME, Role.READ)
    async with database.system_session() as session:
        principal = await authenticate(session, key)
    assert principal is not None and principal.scope == ACME


async def _seed_v3(database: Database) -> None:
    vector = "[" + ",".join(["0.0625"] * 256) + "]"
    async with database.session(ACME) as session:
        for statement in (
            "INSERT INTO ragsage_generations VALUES "
            "('acme', 1, 'ragsage-hashing-256', 256, 'active', now(), now())",
            "INSERT INTO ragsage_documents (namespace, id, content_hash, title, source, "
            "external_id) VALUES ('acme', 'doc_v3', 'hash-v3', 'V3', 'v3.md', 'v3.md')",
            "INSERT INTO ragsage_chunks (namespace, generation, document_id, ordinal, text, "
            "embed_text, source, embedding_model, embedding_dim, embedding) VALUES "
            "('acme', 1, 'doc_v3', 0, 'zirconium ledger', 'zirconium ledger', 'v3.md', "
            "'ragsage-hashing-256', 256, CAST(:v AS vector))",
        ):
            await session.execute(text(statement), {"v": vector})


# The keyword function called with every argument spelled out, so a check does
# not depend on what today's PgLexicalStore passes; a schema holds it from 13 on.
_KEYWORD_SEARCH = (
    "ragsage_keyword_search({query}, false, 3, 500, 500, NULL, NULL, NULL, NULL, NULL, true, "
    "NULL, 3)"
)


async def _keyword_hits(database: Database, scope: Scope, query: str) -> list[tuple[str, int]]:
    async with database.session(scope) as session:
        rows = await session.execute(
            text(f"SELECT document_id, ordinal FROM {_KEYWORD_SEARCH.format(query=':q')}"),
            {"q": query},
        )
        return [(row[0], row[1]) for row in rows]


async def _keyword_rank(database: Database, query: str) -> float:
    async with database.session(ACME) as session:
        rank = await session.scalar(
            text(f"SELECT rank FROM {_KEYWORD_SEARCH.format(query=':q')}"), {"q": query}
        )
    return float(rank)


async def _check_v4(database: Database) -> None:
    # What 4 leaves of its day: the system role reads chunks and generations.
    async with database.owner_connection() as connection:
        policies = set(
            await connection.scalars(
                text("SELECT policyname FROM pg_policies WHERE roles @> '{ragsage_system}'")
            )
        )
    assert {"ragsage_chunks_system", "ragsage_generations_system"} <= policies
    # The keyword search those reads are for, once the schema is today's.
    await database.migrate()
    assert await _keyword_hits(database, ACME, "zirconium") == [("doc_v3", 0)]
    assert await _keyword_hits(database, GLOBEX, "zirconium") == []


async def _check_v5(database: Database) -> None:
    # Plain SQL: today's reindex_status.status reads columns later versions added.
    async with database.session(ACME) as session:
        row = (
            await session.execute(
                text(
                    "SELECT g.embedder, g.embedding_model, g.state, "
                    "(SELECT count(*) FROM ragsage_chunks c WHERE c.generation = g.id) "
                    "FROM ragsage_generations g"
                )
            )
        ).one()
    assert tuple(row) == ("hashing", "ragsage-hashing-256", "active", 1)
    await _check_v4(database)


async def _check_v6(database: Database) -> None:
    async with database.owner_connection() as connection:
        storage = dict(
            (
                await connection.execute(
                    text(
                        "SELECT attname, attstorage FROM pg_attribute "
                        "WHERE attrelid = 'ragsage_chunks'::regclass "
                        "AND attname IN ('embedding', 'lexical')"
                    )
                )
            ).all()
        )
        options = await connection.scalar(
            text("SELECT reloptions FROM pg_class WHERE oid = 'ragsage_chunks'::regclass")
        )
    assert storage == {"embedding": "m", "lexical": "m"}  # kept in the row
    assert "toast_tuple_target=8160" in options
    await _check_v5(database)


async def _check_v7(database: Database) -> None:
    # Today's stores read columns later versions add: the rows go up to the latest first.
    await database.migrate()
    async with database.session(ACME) as session:
        await session.execute(
            text(
                "UPDATE ragsage_chunks SET text = 'zirconium ledger via "
                "concurrent.futures.ThreadPoolExecutor' WHERE document_id = 'doc_v3'"
            )
        )
    lexical = helpers.stores(database, helpers.kit()).lexical
    for query in ("zirconium", "ThreadPoolExecutor", "thread pool executor", "futures"):
        (hit,) = await lexical.search(ACME, query, k=3)
        assert hit.chunk.id == "doc_v3:0" and hit.keyword_score and hit.keyword_score > 0
    assert await lexical.search(GLOBEX, "zirconium", k=3) == []
    await _check_v6(database)


async def _check_v8(database: Database) -> None:
    from ragsage.adapters.postgres import EmbeddingModelMismatch, PgLexicalStore, PgVectorStore

    vector = "[" + ",".join(["0.125"] * 128) + "]"
    async with database.session(ACME) as session:
        held = await session.scalar(text("SELECT held FROM ragsage_generations WHERE id = 1"))
    await database.migrate()  # as in _check_v7: today's stores need today's columns
    async with database.session(ACME) as session:
        for statement in (
            "INSERT INTO ragsage_generations (namespace, id, embedding_model, embedding_dim, "
            "state, embedder) VALUES ('acme', 2, 'ragsage-hashing-128', 128, 'building', "
            "'hashing')",
            "INSERT INTO ragsage_chunks (namespace, generation, document_id, ordinal, text, "
            "embed_text, source, embedding_model, embedding_dim, embedding) VALUES "
            "('acme', 2, 'doc_v3', 0, 'zirconium ledger cobalt', 'zirconium ledger cobalt', "
            "'v3.md', 'ragsage-hashing-128', 128, CAST(:v AS vector))",
        ):
            await session.execute(text(statement), {"v": vector})
    assert held is False

    def lexical(generation: int | None) -> PgLexicalStore:
        return PgLexicalStore(database, text_search_config="english", generation=generation)

    (hit,) = await lexical(2).search(ACME, "cobalt", k=3)
    assert hit.chunk.id == "doc_v3:0" and "cobalt" in hit.chunk.text
    assert await lexical(None).search(ACME, "cobalt", k=3) == []  # the active one has none
    assert [h.chunk.text for h in await lexical(1).search(ACME, "zirconium", k=3)] == [
        "zirconium ledger"
    ]
    assert await lexical(2).search(GLOBEX, "cobalt", k=3) == []
    assert await lexical(99).search(ACME, "zirconium", k=3) == []

    building = PgVectorStore(
        database, embedding_model="ragsage-hashing-128", embedding_dim=128, generation=2
    )
    (dense,) = await building.search(ACME, (0.125,) * 128, k=3)
    assert dense.chunk.text == "zirconium ledger cobalt"
    wrong = PgVectorStore(
        database, embedding_model="ragsage-hashing-256", embedding_dim=256, generation=2
    )
    with pytest.raises(EmbeddingModelMismatch):
        await wrong.search(ACME, (0.0625,) * 256, k=3)
    async with database.session(ACME) as session:
        await session.execute(text("DELETE FROM ragsage_chunks WHERE generation = 2"))
        await session.execute(text("DELETE FROM ragsage_generations WHERE id = 2"))
    await _check_v7(database)


async def _check_v9(database: Database) -> None:
    pg = helpers.stores(database, helpers.kit())
    (old,) = await pg.documents.chunks(ACME, "doc_v3")
    # A row written before spans existed reads back as the unknown span.
    assert (old.text, old.start_char, old.end_char) == ("zirconium ledger", 0, 0)
    await database.migrate()  # today's lexical store reads the chunks its function returns
    (hit,) = await pg.lexical.search(ACME, "zirconium", k=3)
    assert (hit.chunk.start_char, hit.chunk.end_char) == (0, 0)


async def _check_v10(database: Database) -> None:
    from types import SimpleNamespace

    from ragsage.adapters.postgres.jobs import store
    from ragsage.jobs.watchdog import reclaim
    from ragsage.settings import Settings

    await database.migrate()  # today's job code reads the latest schema
    async with database.session(ACME) as session:
        (job,) = await store.list_jobs(session)
        # A job from before the count starts with no lost deliveries ...
        assert (job.filename, job.lost_deliveries, job.deliveries) == ("v2.md", 0, 0)
        claimed = await store.claim(session, job.id, 0.0)  # a lease that is over at once
        assert claimed is not None and claimed.lost_deliveries == 0
    # ... and one whose lease ran out while running counts as lost once, however found.
    # The watchdog needs only these two parts of a runtime.
    runtime = SimpleNamespace(database=database, settings=Settings())
    reclaimed = await reclaim(runtime, ACME.namespace, job.id)  # type: ignore[arg-type]
    assert reclaimed is not None and reclaimed.kind == "ingest"
    async with database.session(ACME) as session:
        again = await store.claim(session, job.id, 60.0)
        assert again is not None
        assert (again.attempts, again.deliveries, again.lost_deliveries) == (2, 2, 1)


async def _check_v11(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import document_rows, store
    from ragsage.adapters.postgres.jobs.uploads import create_upload
    from ragsage.core.jobs import JobState, Upload

    async with database.session(ACME) as session:
        (old,) = await store.list_jobs(session)
        # A job from before versions were numbered is never superseded ...
        assert old.version is None
        assert not store.is_superseded(
            old, await document_rows.stored_version(session, old.document_id)
        )
        # ... and the document's next upload is its version 1.
        outcome = await create_upload(
            session, ACME, Upload("v2.md", b"# Version three"), max_bytes=10**6
        )
        assert outcome.job_id is not None and not outcome.duplicate
        new = await store.get_job(session, outcome.job_id)
        assert new is not None and (new.document_id, new.version) == (old.document_id, 1)
        await store.supersede(session, new, 2)
        after = await store.get_job(session, outcome.job_id)
        assert after is not None and after.state is JobState.SUPERSEDED


async def _check_v12(database: Database) -> None:
    from ragsage.adapters.postgres.jobs import reindex, reindex_status

    async with database.session(ACME) as session:
        await session.execute(
            text(
                "INSERT INTO ragsage_generations (namespace, id, embedding_model, embedding_dim, "
                "state, embedder) VALUES ('acme', 7, 'ragsage-hashing-128', 128, 'building', "
                "'hashing')"
            )
        )
        assert all(g.gate is None for g in await reindex_status.status(session))  # none was judged
        await reindex.record_gate(session, 7, {"passed": False, "drop": 0.1})
        (judged,) = [g for g in await reindex_status.status(session) if g.id == 7]
        assert judged.gate == {"passed": False, "drop": 0.1}


async def _term_counts(database: Database, scope: Scope) -> dict[str, int]:
    async with database.session(scope) as session:
        rows = await session.execute(text("SELECT term, chunks FROM ragsage_term_stats"))
        return {str(term): int(chunks) for term, chunks in rows}


async def _check_v13(database: Database) -> None:
    # Nothing is counted until a search asks; then each term once, in its namespace.
    assert await _term_counts(database, ACME) == {}
    assert await _keyword_hits(database, ACME, "zirconium ledger") == [("doc_v3", 0)]
    counted = await _term_counts(database, ACME)
    assert (counted["zirconium"], counted["ledger"]) == (1, 1)
    assert await _term_counts(database, GLOBEX) == {}
    assert await _keyword_hits(database, GLOBEX, "zirconium") == []
    assert "zirconium" not in await _term_counts(database, GLOBEX)


async def _check_v14(database: Database) -> None:
    # The cache still fills per namespace, and the function hands back the chunk itself.
    await _check_v13(database)
    async with database.session(ACME) as session:
        call = _KEYWORD_SEARCH.format(query="'zirconium ledger'")
        rows = (
            await session.execute(
                text(f"SELECT document_id, ordinal, chunk_text, source, rank FROM {call}")
            )
        ).all()
    assert [tuple(row[:4]) for row in rows] == [("doc_v3", 0, "zirconium ledger", "v3.md")]
    assert rows[0][4] > 0


async def _check_v15(database: Database) -> None:
    # The app role may ask; a table of a few rows is left to autovacuum.
    assert await database.refresh_statistics() is False
    await _check_v14(database)


async def _check_v16(database: Database) -> None:
    await _check_v15(database)
    # The same chunk, the same words: in the text's order they count twice.
    assert await _keyword_rank(database, "zirconium ledger") == 2 * await _keyword_rank(
        database, "ledger zirconium"
    )


async def _check_v17(database: Database) -> None:
    await _check_v16(database)
    async with database.owner_connection() as connection:
        options = await connection.scalar(
            text("SELECT reloptions FROM pg_class WHERE relname = 'ragsage_chunks_lexical'")
        )
    assert options == ["gin_pending_list_limit=256"]


async def _check_v18(database: Database) -> None:
    await _check_v17(database)
    assert await _term_counts(database, ACME)  # the v13 check searched and counted
    async with database.session(GLOBEX) as session:
        await session.execute(text("DELETE FROM ragsage_term_stats"))
    assert await _term_counts(database, ACME)  # another namespace cannot touch them
    async with database.session(ACME) as session:
        await session.execute(text("DELETE FROM ragsage_term_stats"))
    assert await _term_counts(database, ACME) == {}


async def _check_v19(database: Database) -> None:
    await _check_v18(database)
    async with database.session(ACME) as session:
        call = _KEYWORD_SEARCH.format(query="'zirconium ledger'").replace("NULL, 3)", "NULL, 1)")
        rows = (
            await session.execute(
                text(f"SELECT document_id, ordinal, chunk_text, rank FROM {call}")
            )
        ).all()
    assert [tuple(row[:3]) for row in rows] == [("doc_v3", 0, "zirconium ledger")]
    assert rows[0][3] > 0
    assert await _keyword_hits(database, GLOBEX, "zirconium") == []


async def _check_v20(database: Database) -> None:
    async with database.owner_connection() as connection:
        retired = await connection.scalar(
            text("SELECT count(*) FROM pg_proc WHERE proname = 'ragsage_lexical_search'")
        )
    assert retired == 0
    await _check_v19(database)


UPGRADES = {
    2: (_seed_v1, _check_v2),
    3: (_seed_v2, _check_v3),
    4: (_seed_v3, _check_v4),
    5: (_seed_v3, _check_v5),  # a version-4 install holds the same rows as version 3
    6: (_seed_v3, _check_v6),
    7: (_seed_v3, _check_v7),
    8: (_seed_v3, _check_v8),
    9: (_seed_v3, _check_v9),
    10: (_seed_v2, _check_v10),
    11: (_seed_v2, _check_v11),
    12: (_seed_v2, _check_v12),
    13: (_seed_v3, _check_v13),
    14: (_seed_v3, _check_v14),
    15: (_seed_v3, _check_v15),
    16: (_seed_v3, _check_v16),
    17: (_seed_v3, _check_v17),
    18: (_seed_v3, _check_v18),
    19: (_seed_v3, _check_v19),
    20: (_seed_v3, _check_v20),
}


@pytest.mark.parametrize("migration", MIGRATIONS, ids=lambda m: f"v{m.version}")
async def test_each_migration_upgrades_the_previous_version(
    pg_config: PostgresConfig, migration: Migration
) -> None:
    database = Database(pg_config)
    try:
        if migration.version > 1:
            seed, check = UPGRADES[migration.version]
            await database.migrate(to_version=migration.version - 1)
            await seed(database)
        assert await database.migrate(to_version=migration.version) == migration.version
        if migration.version > 1:
            await check(database)
    finally:
        await database.dispose()


def test_every_migration_after_the_first_has_an_upgrade_test() -> None:
    assert set(UPGRADES) == {m.version for m in MIGRATIONS if m.version > 1}


def test_migration_statements_are_inspectable_without_a_database(
    pg_config: PostgresConfig,
) -> None:
    statements = migration_statements(pg_config)
    assert statements[0] == "CREATE EXTENSION IF NOT EXISTS vector"
    joined = "\n".join(statements)
    assert "FORCE ROW LEVEL SECURITY" in joined
    assert "to_tsvector('english'::regconfig" in joined
    assert "USING hnsw ((embedding::vector(256)) vector_cosine_ops)" in joined
    assert "current_setting('ragsage.namespace', true)" in joined


async def test_ingest_then_dense_and_lexical_search(db: Database) -> None:
    kit = helpers.kit()
    result = await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    pg = helpers.stores(db, kit)

    vector = (await kit.embedder.embed(["paid holiday days per year"], input_type="query"))[0]
    dense = await pg.vectors.search(ACME, tuple(vector), k=3)
    lexical = await pg.lexical.search(ACME, "How much holiday do employees get?", k=3)

    assert "28 days of paid holiday" in dense[0].chunk.text
    assert dense[0].vector_score is not None and 0 < dense[0].vector_score <= 1
    assert "28 days of paid holiday" in lexical[0].chunk.text
    assert lexical[0].keyword_score is not None and lexical[0].keyword_score > 0
    assert lexical[0].chunk.heading_path == ("Employee handbook", "Holidays")
    assert await pg.documents.count_chunks(ACME) == result.chunks

    answer = await helpers.engine(db, kit).answer(ACME, "How many days of paid holiday?")
    assert "28 days" in answer.text and answer.citations[0].source == "handbook.md"


async def test_chunk_spans_survive_the_round_trip_through_postgres(db: Database) -> None:
    backend = HeuristicBackend()
    kit = FakeEngineKit(dimension=helpers.TEST_DIM, parser=backend, chunker=backend)
    result = await helpers.ingest(db, kit, ACME, HANDBOOK, "spans.md", chunk_size=24)
    pg = helpers.stores(db, kit)
    stored = await pg.documents.chunks(ACME, result.document.id)
    page = backend.parse(RawSource(HANDBOOK.encode(), "spans.md")).pages[0].text
    assert len(stored) > 2 and stored[-1].start_char > 0
    for chunk in stored:
        assert page[chunk.start_char : chunk.end_char] == chunk.text
    vector = (await kit.embedder.embed(["paid holiday"], input_type="query"))[0]
    (dense, *_) = await pg.vectors.search(ACME, tuple(vector), k=3)
    (lexical, *_) = await pg.lexical.search(ACME, "paid holiday", k=3)
    for hit in (dense, lexical):
        assert page[hit.chunk.start_char : hit.chunk.end_char] == hit.chunk.text


async def test_reingesting_at_a_larger_chunk_size_leaves_no_stale_tail(db: Database) -> None:
    kit = helpers.kit()
    small = await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md", chunk_size=16)
    large = await helpers.ingest(
        db, kit, ACME, HANDBOOK.replace("28", "30"), "handbook.md", chunk_size=400
    )
    assert large.chunks < small.chunks
    pg = helpers.stores(db, kit)
    chunks = await pg.documents.chunks(ACME, large.document.id)
    assert [c.ordinal for c in chunks] == list(range(large.chunks))
    async with db.session(ACME) as session:
        rows = await session.scalar(text("SELECT count(*) FROM ragsage_chunks"))
    assert rows == large.chunks
    document = await pg.documents.get(ACME, large.document.id)
    assert document is not None and document.content_hash == large.document.content_hash


async def test_purge_deletes_exactly_one_namespace(db: Database) -> None:
    kit = helpers.kit()
    await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    kept = await helpers.ingest(db, kit, GLOBEX, HANDBOOK, "handbook.md")
    lexical = helpers.stores(db, kit).lexical
    for scope in (ACME, GLOBEX):  # each search leaves its terms' counts behind
        assert await lexical.search(scope, "holiday allowance", k=5)
    async with db.session(ACME) as session:
        await purge_namespace(session)
    engine = helpers.engine(db, kit)
    assert await engine.count(ACME) == 0 and await engine.list_sources(ACME) == []
    assert await engine.count(GLOBEX) == kept.chunks
    # Nothing of the purged namespace is left, its keyword counts included.
    assert await _term_counts(db, ACME) == {}
    assert set(await _term_counts(db, GLOBEX)) >= {"holiday", "allow"}


async def test_delete_removes_the_document_and_its_chunks(db: Database) -> None:
    kit = helpers.kit()
    result = await helpers.ingest(db, kit, ACME, HANDBOOK, "handbook.md")
    pg = helpers.stores(db, kit)
    await pg.documents.delete(ACME, result.document.id)
    assert await pg.documents.get(ACME, result.document.id) is None
    assert await pg.documents.count_chunks(ACME) == 0
    assert await pg.lexical.search(ACME, "holiday", k=5) == []


async def test_an_upgrade_from_every_earlier_version_ends_in_the_fresh_schema(
    postgres_server: PostgresServer, pg_config: PostgresConfig
) -> None:
    fresh = Database(pg_config)
    try:
        await fresh.migrate()
        async with fresh.owner_connection() as connection:
            expected = await schema_snapshot(connection)
    finally:
        await fresh.dispose()
    assert expected["functions"] and expected["policies"]
    for version in range(1, LATEST_VERSION):
        url = postgres_server.create_database()
        app_url = as_user(url, "ragsage_app", os.environ.get("RAGSAGE_TEST_APP_PASSWORD"))
        database = Database(replace(pg_config, dsn=url, app_dsn=app_url))
        try:
            await database.migrate(to_version=version)
            await database.migrate()
            async with database.owner_connection() as connection:
                upgraded = await schema_snapshot(connection)
        finally:
            await database.dispose()
            postgres_server.drop_database(url)
        differing = {
            kind: sorted(set(upgraded[kind].items()) ^ set(expected[kind].items()))
            for kind in expected
        }
        assert {kind: rows for kind, rows in differing.items() if rows} == {}, version
