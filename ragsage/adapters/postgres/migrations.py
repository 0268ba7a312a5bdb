"""Versioned schema migrations, run on an owner connection, from the SQL files in ``sql/``.

Each numbered file in ``sql/migrations`` is one step; ``ragsage_schema``
records the version an install has reached, with the embedding width and
text-search configuration it was built for.  :func:`migrate` applies the
missing steps in order under an advisory lock, so an API and several workers
starting together migrate once, and then applies every function of
``sql/functions`` the target version can hold: each function is written once,
in its current form (``sql/README.md`` says how a change is made).

Tenant tables share one pattern: a ``namespace`` column, ``ENABLE`` and
``FORCE ROW LEVEL SECURITY``, and a policy comparing ``namespace`` with the
transaction-local isolation setting.  With the setting unset the comparison is
NULL and nothing is visible, so a forgotten preamble fails closed.

Vectors live in an unsized ``vector`` column beside their width, and each width
gets its own partial HNSW index over ``embedding::vector(N)`` (or ``halfvec(N)``,
the ``hnsw_type`` setting; :mod:`~ragsage.adapters.postgres.graph_keys`).  That is what
lets an embedding generation of another width (a model change) be built next to
the serving one in the same table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from ragsage.adapters.postgres.config import PostgresConfig
from ragsage.adapters.postgres.graph_keys import shared_key, shared_opclass
from ragsage.adapters.postgres.sql_files import (
    config_values,
    file_statements,
    requirement,
    sql_files,
    sql_root,
)
from ragsage.core.errors import ConfigurationError

SCHEMA_TABLE = "ragsage_schema"
TENANT_TABLES = ("ragsage_generations", "ragsage_documents", "ragsage_chunks")
SERVICE_TABLES = ("ragsage_blobs", "ragsage_jobs", "ragsage_pages", "ragsage_api_keys")
# Per-namespace keyword term counts and the changes not yet folded into them
# (migrations 13 and 29), written only by the writers' function.
STATISTICS_TABLES = ("ragsage_term_stats", "ragsage_term_changes")
# The operator's per-namespace overrides (migration 21): a tenant reads its row only.
OPERATOR_TABLES = ("ragsage_namespace_settings",)
# Webhook endpoints, the outbox of events and their deliveries (migration 24).
WEBHOOK_TABLES = ("ragsage_webhooks", "ragsage_webhook_events", "ragsage_webhook_deliveries")
MIN_PGVECTOR = (0, 8, 0)
_LOCK_KEY = 0x7261_6773  # "rags": one advisory lock for every ragsage migration
_STEP_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_DESCRIPTION = re.compile(r"^-- Migration \d+: (.+?)\.?$", re.M)


class SchemaMismatch(RuntimeError):
    """The installed schema disagrees with the configuration migrating it.

    ``CREATE ... IF NOT EXISTS`` would accept a config whose width or text-search
    configuration differs from what is installed, and the disagreement would
    surface much later as a confusing insert error.  Raising before any DDL puts
    the error where the mistake is.
    """


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered schema step: ``sql/migrations/<version>_<name>.sql``."""

    version: int
    name: str
    description: str

    @property
    def path(self) -> str:
        return f"migrations/{self.version:04d}_{self.name}.sql"

    def statements(self, config: PostgresConfig) -> tuple[str, ...]:
        return file_statements(sql_root().joinpath(self.path), config_values(config))


@cache
def _migrations() -> tuple[Migration, ...]:
    found = []
    for file in sql_files("migrations"):
        named = _STEP_NAME.match(file.name)
        described = _DESCRIPTION.search(file.read_text("utf-8"))
        if named is None or described is None:
            raise ValueError(f"{file.name}: a step is NNNN_name.sql and opens with its description")
        found.append(Migration(int(named.group(1)), named.group(2), described.group(1)))
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise ValueError("the migration files must be numbered 1, 2, 3, ... without gaps")
    return tuple(found)


MIGRATIONS = _migrations()
LATEST_VERSION = MIGRATIONS[-1].version


def width_index_name(dim: int) -> str:
    return f"ragsage_chunks_embedding_{int(dim)}"


def hnsw_index_statement(config: PostgresConfig, dim: int, *, concurrently: bool = False) -> str:
    """The partial HNSW index serving every vector of width ``dim``.

    ``concurrently`` builds it without blocking writes (outside a transaction).
    Migration 1 makes the configured width's; this makes any other's.
    """
    if not 1 <= dim <= 2000:
        raise ValueError(f"vector width out of range: {dim}")
    how = "CONCURRENTLY " if concurrently else ""
    return (
        f"CREATE INDEX {how}IF NOT EXISTS {width_index_name(dim)} ON ragsage_chunks "
        f"USING hnsw (({shared_key(dim, config.hnsw_type)}) {shared_opclass(config.hnsw_type)}) "
        f"WITH (m = {int(config.hnsw_m)}, ef_construction = {int(config.hnsw_ef_construction)}) "
        f"WHERE embedding_dim = {dim}"
    )


def function_statements(config: PostgresConfig, *, version: int) -> tuple[str, ...]:
    """Every function a schema at ``version`` holds, in its current form."""
    values = config_values(config)
    statements: list[str] = []
    for file in sql_files("functions"):
        needs = requirement(file)
        if not 1 <= needs <= LATEST_VERSION:
            raise ValueError(f"{file.name} requires version {needs}, which no step reaches")
        if needs <= version:
            statements.extend(file_statements(file, values))
    return tuple(statements)


def migration_statements(
    config: PostgresConfig, *, from_version: int = 0, to_version: int | None = None
) -> tuple[str, ...]:
    """Every statement :func:`migrate` runs between two versions, in order."""
    target = LATEST_VERSION if to_version is None else to_version
    values = config_values(config)
    statements: list[str] = []
    if from_version == 0:
        statements.extend(file_statements(sql_root().joinpath("bootstrap.sql"), values))
    for migration in MIGRATIONS:
        if from_version < migration.version <= target:
            statements.extend(migration.statements(config))
    if from_version < target:
        statements.extend(function_statements(config, version=target))
    return tuple(statements)


async def _schema_row(connection: AsyncConnection) -> tuple[int, int, str] | None:
    exists = await connection.scalar(
        text("SELECT to_regclass(:name) IS NOT NULL"), {"name": SCHEMA_TABLE}
    )
    if not exists:
        return None
    row = (
        await connection.execute(
            text(f"SELECT version, embedding_dim, text_search_config FROM {SCHEMA_TABLE}")
        )
    ).first()
    return (int(row[0]), int(row[1]), str(row[2])) if row else None


async def width_indexes(connection: AsyncConnection, hnsw_type: str) -> dict[int, bool]:
    """The per-width HNSW indexes that exist: width → usable.

    False for a failed build, and for a graph of another type than ``hnsw_type``
    (the setting changed since it was built): either is built again.
    """
    rows = await connection.execute(
        text(
            "SELECT c.relname, i.indisvalid AND pg_get_indexdef(i.indexrelid) LIKE "
            "'%' || CAST(:opclass AS text) || '%' FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE t.relname = 'ragsage_chunks' "
            "AND c.relname LIKE 'ragsage\\_chunks\\_embedding\\_%'"
        ),
        {"opclass": shared_opclass(hnsw_type)},
    )
    found: dict[int, bool] = {}
    for name, valid in rows:
        suffix = str(name).rsplit("_", 1)[1]
        if suffix.isdigit():
            found[int(suffix)] = bool(valid)
    return found


async def existing_embedding_dim(connection: AsyncConnection) -> int | None:
    """The default vector width the install was built for, or None if not installed."""
    row = await _schema_row(connection)
    return row[1] if row else None


async def schema_version(connection: AsyncConnection) -> int:
    """The migration version the database has reached (0 when nothing is installed)."""
    row = await _schema_row(connection)
    return row[0] if row else 0


async def check_pgvector(connection: AsyncConnection) -> str:
    """Raise ConfigurationError unless pgvector ≥ 0.8 is available; return its version."""
    version = await connection.scalar(
        text(
            "SELECT coalesce("
            "(SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
            "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector'))"
        )
    )
    if version is None:
        raise ConfigurationError(
            "the pgvector extension is not installed on this Postgres server; "
            "ragsage needs pgvector 0.8 or newer"
        )
    parts = tuple(int(p) for p in re.findall(r"\d+", str(version))[:3])
    if parts < MIN_PGVECTOR:
        raise ConfigurationError(
            f"pgvector {version} is installed; ragsage needs 0.8 or newer "
            "(filtered vector search relies on its iterative index scans)"
        )
    return str(version)


async def migrate(
    connection: AsyncConnection, config: PostgresConfig, *, to_version: int | None = None
) -> int:
    """Bring the schema up to ``to_version`` (default: latest). Idempotent.

    Raises :class:`SchemaMismatch` before any DDL when the install was built for
    another embedding width or text-search configuration.  Returns the version
    reached.
    """
    target = LATEST_VERSION if to_version is None else to_version
    await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
    await check_pgvector(connection)
    row = await _schema_row(connection)
    if row is not None:
        version, dim, tsconfig = row
        if dim != config.embedding_dim:
            raise SchemaMismatch(
                f"the database was set up for {dim}-dimensional embeddings, but "
                f"embedding_dim is {config.embedding_dim}; use the same width, or re-index"
            )
        if tsconfig != config.text_search_config:
            raise SchemaMismatch(
                f"the lexical index was built with text search configuration {tsconfig!r}, "
                f"but text_search_config is {config.text_search_config!r}"
            )
    current = row[0] if row else 0
    if current >= target:
        return current
    for statement in migration_statements(config, from_version=current, to_version=target):
        await connection.execute(text(statement))
    await connection.execute(
        text(
            f"INSERT INTO {SCHEMA_TABLE} (version, embedding_dim, text_search_config) "
            "VALUES (:version, :dim, :tsconfig) ON CONFLICT (singleton) DO UPDATE "
            "SET version = excluded.version, updated_at = now()"
        ),
        {"version": target, "dim": config.embedding_dim, "tsconfig": config.text_search_config},
    )
    return target
