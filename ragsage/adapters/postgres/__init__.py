"""Postgres storage: pools, scoped sessions, migrations and the three stores.

Not imported by ``import ragsage``: the engine runs without a database, and
only code that means to talk to Postgres pays for SQLAlchemy and psycopg.

    from ragsage.adapters.postgres import Database, PostgresConfig
    db = Database(PostgresConfig(dsn=owner_url, app_dsn=app_url))
    await db.migrate()
    async with db.session(Scope("acme")) as session:
        ...  # runs as the app role, sees only namespace "acme"
"""

from ragsage.adapters.postgres.config import (
    PostgresConfig,
    redact,
    safe_identifier,
    safe_setting_name,
)
from ragsage.adapters.postgres.database import Database, create_engine, create_sessionmaker
from ragsage.adapters.postgres.document_store import PgDocumentStore, purge_namespace
from ragsage.adapters.postgres.generations import active_generation, live_generations
from ragsage.adapters.postgres.isolation import Statement, isolation_preamble, open_scoped_session
from ragsage.adapters.postgres.lexical_store import PgLexicalStore
from ragsage.adapters.postgres.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    SchemaMismatch,
    check_pgvector,
    existing_embedding_dim,
    migrate,
    migration_statements,
    schema_version,
)
from ragsage.adapters.postgres.vector_store import PgVectorStore

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Database",
    "PgDocumentStore",
    "PgLexicalStore",
    "PgVectorStore",
    "PostgresConfig",
    "SchemaMismatch",
    "Statement",
    "active_generation",
    "check_pgvector",
    "create_engine",
    "create_sessionmaker",
    "existing_embedding_dim",
    "isolation_preamble",
    "live_generations",
    "migrate",
    "migration_statements",
    "open_scoped_session",
    "purge_namespace",
    "redact",
    "safe_identifier",
    "safe_setting_name",
    "schema_version",
]
