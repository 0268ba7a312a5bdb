"""``ragsage.storage.schema``: the versioned migrations, at the path the reference page names.

They live in :mod:`ragsage.adapters.postgres.migrations`; they run on the owner
connection only.
"""

from ragsage.adapters.postgres.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    SchemaMismatch,
    migrate,
    migration_statements,
    schema_version,
)

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "SchemaMismatch",
    "migrate",
    "migration_statements",
    "schema_version",
]
