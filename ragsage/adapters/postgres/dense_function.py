"""The dense search function of one embedding width (``sql/nearest.sql``, which says why).

Made again for every configured width by every :meth:`Database.migrate`, as
the width's index is built there; a width without its function is searched by
the statement of :func:`ragsage.adapters.postgres.dense_statements.dense_statement`.
"""

from __future__ import annotations

from ragsage.adapters.postgres.config import PostgresConfig
from ragsage.adapters.postgres.graph_keys import walk_limit
from ragsage.adapters.postgres.sql_files import config_values, file_statements, sql_root


def dense_function_name(dim: int) -> str:
    if not 1 <= dim <= 2000:
        raise ValueError(f"vector width out of range: {dim}")
    return f"ragsage_nearest_{int(dim)}"


def dense_function_signature(dim: int) -> str:
    return f"{dense_function_name(dim)}(vector, integer, integer, boolean, integer)"


def dense_function_statements(config: PostgresConfig, dim: int) -> tuple[str, ...]:
    """The width's function and its grant to the app role, safe to run again."""
    values = {
        **config_values(config),
        "dim": str(int(dim)),
        "walk_limit": walk_limit("k", config.hnsw_type),
    }
    dense_function_name(dim)  # the width's range is checked before any SQL is written
    return file_statements(sql_root().joinpath("nearest.sql"), values)
