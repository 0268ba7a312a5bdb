"""The migrations: each one upgrades the version before it, and every path ends in one schema."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text

from ragsage.adapters.postgres import (
    LATEST_VERSION,
    MIGRATIONS,
    Database,
    PostgresConfig,
    SchemaMismatch,
    existing_embedding_dim,
    migrate,
    migration_statements,
    schema_version,
)
from ragsage.adapters.postgres.migrations import (
    OPERATOR_TABLES,
    SERVICE_TABLES,
    STATISTICS_TABLES,
    TENANT_TABLES,
    WEBHOOK_TABLES,
    Migration,
)
from ragsage.core.scopes import Scope

from .conftest import PostgresServer, as_user
from .schema_snapshot import Snapshot, database_snapshot, differences
from .upgrade_checks import UPGRADES

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
    assert tables == {
        "ragsage_schema",
        *TENANT_TABLES,
        *SERVICE_TABLES,
        *STATISTICS_TABLES,
        *OPERATOR_TABLES,
        *WEBHOOK_TABLES,
    }


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


async def _fresh_snapshot(pg_config: PostgresConfig) -> Snapshot:
    fresh = Database(pg_config)
    try:
        await fresh.migrate()
        return await database_snapshot(fresh)
    finally:
        await fresh.dispose()


async def test_an_upgrade_from_every_earlier_version_ends_in_the_fresh_schema(
    postgres_server: PostgresServer, pg_config: PostgresConfig
) -> None:
    expected = await _fresh_snapshot(pg_config)
    assert expected["functions"] and expected["policies"]
    for version in range(1, LATEST_VERSION):
        url = postgres_server.create_database()
        app_url = as_user(url, "ragsage_app", os.environ.get("RAGSAGE_TEST_APP_PASSWORD"))
        database = Database(replace(pg_config, dsn=url, app_dsn=app_url))
        try:
            await database.migrate(to_version=version)
            await database.migrate()
            upgraded = await database_snapshot(database)
        finally:
            await database.dispose()
            postgres_server.drop_database(url)
        assert differences(upgraded, expected) == {}, version


HISTORY = Path(__file__).parents[1] / "fixtures/schema/v19_by_12c5535.sql"


async def test_a_schema_as_release_19_left_it_upgrades_to_the_fresh_schema(
    postgres_server: PostgresServer, pg_config: PostgresConfig
) -> None:
    # Intermediate installs made by today's code hold today's function bodies;
    # this one is the catalogue the code of that day really left behind.
    expected = await _fresh_snapshot(pg_config)
    url = postgres_server.create_database()
    try:
        with psycopg.connect(url, autocommit=True) as connection:
            # Roles live outside a database, so the dump does not carry them.
            for statement in migration_statements(pg_config, to_version=2):
                if "ROLE" in statement or statement.startswith('GRANT "ragsage_system"'):
                    connection.execute(statement.encode())
            connection.execute(HISTORY.read_text().encode())
        app_url = as_user(url, "ragsage_app", os.environ.get("RAGSAGE_TEST_APP_PASSWORD"))
        database = Database(replace(pg_config, dsn=url, app_dsn=app_url))
        try:
            async with database.owner_connection() as connection:
                await connection.execute(
                    text(
                        "INSERT INTO ragsage_schema (version, embedding_dim, text_search_config) "
                        "VALUES (19, 256, 'english')"
                    )
                )
            assert await database.migrate() == LATEST_VERSION
            upgraded = await database_snapshot(database)
        finally:
            await database.dispose()
    finally:
        postgres_server.drop_database(url)
    assert differences(upgraded, expected) == {}
