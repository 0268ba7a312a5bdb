"""What a migrated schema consists of, read from the catalogue, for comparing two installs.

Function bodies are compared with their whitespace collapsed: a body re-indented
in its SQL file is the same function.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import text

from ragsage.adapters.postgres import Database

Snapshot = dict[str, dict[str, tuple[Any, ...]]]

_QUERIES = {
    "functions": """
        SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
            p.prosrc, p.provolatile, p.prosecdef, p.proconfig::text,
            pg_get_userbyid(p.proowner), p.proacl::text, pg_get_function_result(p.oid)
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.proname LIKE 'ragsage%'""",
    "columns": """
        SELECT c.relname || '.' || a.attname, format_type(a.atttypid, a.atttypmod),
            a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attgenerated, a.attstorage
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'ragsage%'
        AND a.attnum > 0 AND NOT a.attisdropped""",
    "tables": """
        SELECT c.relname, c.relacl::text, c.relrowsecurity, c.relforcerowsecurity,
            c.reloptions::text
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'ragsage%'""",
    "indexes": """
        SELECT c.relname, pg_get_indexdef(c.oid), c.reloptions::text
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'i' AND c.relname LIKE 'ragsage%'""",
    "constraints": """
        SELECT t.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
        FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = 'public' AND t.relname LIKE 'ragsage%'""",
    "policies": """
        SELECT tablename || '.' || policyname, cmd, roles::text, qual, with_check
        FROM pg_policies WHERE schemaname = 'public'""",
}


def _normal(value: Any) -> Any:
    return re.sub(r"\s+", " ", value).strip() if isinstance(value, str) else value


async def database_snapshot(database: Database) -> Snapshot:
    """Every ragsage function, column, table, index, constraint and policy of a migrated
    database, by name, read as its owner."""
    snapshot: Snapshot = {}
    async with database.owner_connection() as connection:
        for kind, query in _QUERIES.items():
            rows = await connection.execute(text(query))
            snapshot[kind] = {str(row[0]): tuple(_normal(v) for v in row[1:]) for row in rows}
    return snapshot


def differences(upgraded: Snapshot, expected: Snapshot) -> dict[str, list[Any]]:
    """The rows of each kind that one snapshot holds and the other lacks; empty when alike."""
    differing = {
        kind: sorted(set(upgraded[kind].items()) ^ set(expected[kind].items())) for kind in expected
    }
    return {kind: rows for kind, rows in differing.items() if rows}
