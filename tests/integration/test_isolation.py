"""Tenant isolation, proven against the real database rather than assumed."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from ragsage.adapters.postgres import Database, PostgresConfig
from ragsage.core.errors import StorageError
from ragsage.core.scopes import Scope

from . import helpers

ACME, GLOBEX = Scope("acme"), Scope("globex")
ACME_TEXT = "# Acme\n\nAcme ships anvils from the Phoenix depot every Tuesday."
GLOBEX_TEXT = "# Globex\n\nGlobex stores zirconium samples in the Cypress vault."
TABLES = ("ragsage_generations", "ragsage_documents", "ragsage_chunks")


@pytest.fixture
async def loaded(db: Database) -> dict[str, str]:
    kit = helpers.kit()
    acme = await helpers.ingest(db, kit, ACME, ACME_TEXT, "acme.md")
    globex = await helpers.ingest(db, kit, GLOBEX, GLOBEX_TEXT, "globex.md")
    return {
        "acme": acme.document.id,
        "globex": globex.document.id,
        "globex_hash": globex.document.content_hash,
    }


async def test_every_store_method_sees_only_its_namespace(
    db: Database, loaded: dict[str, str]
) -> None:
    kit = helpers.kit()
    pg = helpers.stores(db, kit)
    zirconium = tuple((await kit.embedder.embed(["zirconium samples vault"]))[0])

    dense = await pg.vectors.search(ACME, zirconium, k=50)
    assert {c.chunk.document_id for c in dense} == {loaded["acme"]}
    assert await pg.lexical.search(ACME, "zirconium", k=50) == []
    assert await pg.documents.find_by_hash(ACME, loaded["globex_hash"]) is None
    assert await pg.documents.get(ACME, loaded["globex"]) is None
    assert [d.id for d in await pg.documents.list(ACME)] == [loaded["acme"]]
    assert await pg.documents.get_chunk(ACME, f"{loaded['globex']}:0") is None
    assert await pg.documents.chunks(ACME, loaded["globex"]) == []
    assert await pg.documents.count_chunks(ACME) == 1

    # Deletes through A's scope cannot reach B's rows.
    await pg.vectors.delete(ACME, loaded["globex"])
    await pg.documents.delete(ACME, loaded["globex"])
    assert await pg.documents.count_chunks(GLOBEX) == 1
    assert (await pg.lexical.search(GLOBEX, "zirconium", k=5))[0].chunk.source == "globex.md"


async def test_raw_selects_in_a_scoped_session_return_only_that_namespace(
    db: Database, loaded: dict[str, str]
) -> None:
    async with db.session(ACME) as session:
        for table in TABLES:
            namespaces = set(await session.scalars(text(f"SELECT namespace FROM {table}")))
            assert namespaces == {"acme"}, table
        everything = (await session.execute(text("SELECT * FROM ragsage_chunks"))).all()
    assert len(everything) == 1


async def test_writing_a_row_for_another_namespace_is_refused(
    db: Database, loaded: dict[str, str]
) -> None:
    with pytest.raises(DBAPIError, match="row-level security"):
        async with db.session(ACME) as session:
            await session.execute(
                text(
                    "INSERT INTO ragsage_documents (namespace, id, content_hash, title, source) "
                    "VALUES ('globex', 'planted', 'x', 'x', 'x')"
                )
            )
    with pytest.raises(DBAPIError, match="row-level security"):
        async with db.session(ACME) as session:
            await session.execute(text("UPDATE ragsage_documents SET namespace = 'globex'"))


async def test_the_app_login_cannot_escape_its_role_or_disable_rls(
    db: Database, loaded: dict[str, str]
) -> None:
    async with db.session(ACME) as session:
        assert await session.scalar(text("SELECT current_user")) == "ragsage_app"
        assert not await session.scalar(
            text("SELECT rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = current_user")
        )
        await session.execute(text("RESET ROLE"))
        assert await session.scalar(text("SELECT current_user")) == "ragsage_app"
        assert await session.scalar(text("SELECT count(*) FROM ragsage_chunks")) == 1

    attempts = [
        "SET ROLE postgres",
        "ALTER TABLE ragsage_chunks DISABLE ROW LEVEL SECURITY",
        "ALTER TABLE ragsage_chunks NO FORCE ROW LEVEL SECURITY",
        "DROP POLICY ragsage_chunks_namespace ON ragsage_chunks",
        "SET row_security = off; SELECT count(*) FROM ragsage_chunks",
        "UPDATE ragsage_schema SET embedding_dim = 3",
    ]
    for attempt in attempts:
        with pytest.raises(DBAPIError):
            async with db.session(ACME) as session:
                await session.execute(text(attempt))
    async with db.session(GLOBEX) as session:
        assert await session.scalar(text("SELECT count(*) FROM ragsage_chunks")) == 1


async def test_a_namespace_value_with_sql_in_it_is_only_data(
    db: Database, loaded: dict[str, str], pg_config: PostgresConfig
) -> None:
    with pytest.raises(ValueError, match="namespace"):
        Scope("acme'; DELETE FROM ragsage_chunks; --")
    hostile = "acme' OR '1'='1"
    async with db.engine.connect() as connection, connection.begin():
        await connection.execute(
            text("SELECT set_config(:name, :value, true)"),
            {"name": pg_config.isolation_variable, "value": hostile},
        )
        assert await connection.scalar(text("SELECT count(*) FROM ragsage_chunks")) == 0
    async with db.session(GLOBEX) as session:
        assert await session.scalar(text("SELECT count(*) FROM ragsage_chunks")) == 1


async def test_without_the_isolation_setting_nothing_is_visible(
    db: Database, loaded: dict[str, str]
) -> None:
    async with db.engine.connect() as connection:
        for table in TABLES:
            assert await connection.scalar(text(f"SELECT count(*) FROM {table}")) == 0


async def test_a_store_refuses_a_session_opened_for_another_namespace(
    db: Database, loaded: dict[str, str]
) -> None:
    kit = helpers.kit()
    async with db.session(GLOBEX) as session:
        with pytest.raises(StorageError, match="scoped to 'globex' cannot serve namespace 'acme'"):
            await helpers.stores(session, kit).documents.list(ACME)


async def test_the_role_switch_fallback_isolates_but_reset_role_undoes_it(
    database_url: str, loaded: dict[str, str]
) -> None:
    """Documents why an app login is preferred: SET LOCAL ROLE can be reset."""
    fallback = Database(PostgresConfig(dsn=database_url, embedding_dim=256))
    try:
        async with fallback.session(ACME) as session:
            assert await session.scalar(text("SELECT current_user")) == "ragsage_app"
            assert await session.scalar(text("SELECT count(*) FROM ragsage_chunks")) == 1
            await session.execute(text("RESET ROLE"))
            assert await session.scalar(text("SELECT count(*) FROM ragsage_chunks")) == 2
    finally:
        await fallback.dispose()


async def test_the_privileged_functions_cross_namespaces_without_leaking(db: Database) -> None:
    from ragsage.adapters.postgres.jobs.uploads import create_upload
    from ragsage.core.jobs import Upload

    for scope, body in ((ACME, ACME_TEXT), (GLOBEX, GLOBEX_TEXT)):
        async with db.session(scope) as session:
            await create_upload(session, scope, Upload("f.md", body.encode()), max_bytes=10**6)

    async with db.system_session() as session:
        # Keyword search scopes itself to the caller's namespace: none here, so nothing.
        found = await session.execute(
            text(
                "SELECT * FROM ragsage_keyword_search('zirconium anvils', false, 10, 500, 500, "
                "NULL, NULL, NULL, NULL, NULL, true, NULL, 10)"
            )
        )
        assert found.all() == []
        # Directly, the system session sees no tenant row at all.
        for table in TABLES:
            assert await session.scalar(text(f"SELECT count(*) FROM {table}")) == 0
        stale = (await session.execute(text("SELECT * FROM ragsage_stale_jobs(0, 3600)"))).all()
        counts = (await session.execute(text("SELECT * FROM ragsage_job_counts()"))).all()
        namespaces = list(await session.scalars(text("SELECT * FROM ragsage_namespaces()")))
        turn = (
            await session.execute(text("SELECT * FROM ragsage_next_job(0, ARRAY[]::uuid[])"))
        ).all()
    # Ids and counts only: no file names, hashes or text come through these doors.
    assert len(turn) == 1 and len(turn[0]) == 2 and turn[0][0] == "acme"  # the older upload
    assert sorted(row[0] for row in stale) == ["acme", "globex"]
    assert all(len(row) == 2 for row in stale)
    assert sorted((row[0], row[1], row[2]) for row in counts) == [
        ("acme", "queued", 1),
        ("globex", "queued", 1),
    ]
    assert namespaces == ["acme", "globex"]

    for attempt in ("SET ROLE ragsage_system", "SELECT set_config('role', 'ragsage_system', true)"):
        with pytest.raises(DBAPIError, match="permission denied"):
            async with db.session(ACME) as session:
                await session.execute(text(attempt))
    async with db.session(ACME) as session:
        assert list(await session.scalars(text("SELECT namespace FROM ragsage_jobs"))) == ["acme"]


async def test_a_pipelined_read_keeps_its_namespace_to_itself(
    db: Database, loaded: dict[str, str]
) -> None:
    # Reads share pooled connections; one namespace's read must leave nothing
    # behind for the next, whether it succeeded or failed.
    setting = "SELECT current_setting('ragsage.namespace', true)"
    count = "SELECT count(*) FROM ragsage_documents"
    for _ in range(3):  # more reads than the pool has connections to hand out afresh
        assert await db.read(ACME, [(setting, {}), (count, {})]) == [(1,)]
        assert await db.read(ACME, [(setting, {})]) == [("acme",)]
        assert await db.read(None, [(setting, {})]) in ([("",)], [(None,)])
        assert await db.read(None, [(count, {})]) == [(0,)]
        with pytest.raises(psycopg.errors.DivisionByZero):
            await db.read(GLOBEX, [("SELECT 1 / 0", {})])
        assert await db.read(None, [(count, {})]) == [(0,)]
        assert await db.read(GLOBEX, [(count, {})]) == [(1,)]
    async with db.engine.connect() as connection:
        raw = await connection.get_raw_connection()
        assert raw.driver_connection.autocommit is False  # handed back as the pool expects
