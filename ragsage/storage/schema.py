"""``ragsage.storage.schema``: the versioned migrations, at the path the reference page names.

They live in :mod:`ragsage.adapters.postgres.migrations`, and run on the owner
connection only.
"""

from ragsage.adapters.postgres.migrations import SchemaMismatch, migrate, migration_statements

__all__ = ["SchemaMismatch", "migrate", "migration_statements"]
