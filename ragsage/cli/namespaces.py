"""``ragsage namespaces``: the operator's view of every namespace, and its overrides.

It needs the database's own credentials (``RAGSAGE_DATABASE_URL``, the owner),
not an API key: no tenant's key can raise its own share.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragsage.settings import Settings

# option → (column, what the number counts); each also takes 'default'.
_OPTIONS = {
    "job_slots": ("job_slots", "jobs it runs at once while other namespaces wait"),
    "max_documents": ("quota_documents", "documents it may hold"),
    "max_bytes": ("quota_bytes", "bytes of uploaded files it may keep"),
    "max_chunks": ("quota_chunks", "chunks it may hold in its serving generation"),
    "max_queued_jobs": ("quota_queued_jobs", "jobs it may have waiting"),
    "search_timeout_ms": ("search_timeout_ms", "ms one statement of its searches may run"),
}


def _amount(value: str) -> int | None:
    if value == "default":
        return None
    try:
        amount = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number (0: no limit) or 'default'; got {value!r}"
        ) from None
    if amount < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or more")
    return amount


def _describe(value: int | None, default: int) -> str:
    if value is None:
        return f"default ({default or 'none'})"
    return str(value) if value else "none"


def delete_command(args: argparse.Namespace) -> int:
    """Erase a namespace whole, after showing what it holds (``--yes`` to go ahead)."""
    from ragsage.runtime.erasure import erase_namespace, preview_erasure

    settings = Settings.from_env()
    try:
        preview = preview_erasure(settings, args.namespace)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.yes:
        print(f"namespace {args.namespace!r} holds {preview.total_rows} rows:")
        for table, count in preview.rows.items():
            if count:
                print(f"  {table:32} {count:>10}")
        print("nothing was deleted; run again with --yes to erase it all", file=sys.stderr)
        return 1
    erasure = erase_namespace(settings, args.namespace)
    print(f"erased namespace {args.namespace!r}: {erasure.total_rows} rows")
    for table, count in erasure.rows.items():
        if count:
            print(f"  {table:32} {count:>10}")
    print(f"  {'cache entries (parses, vectors)':32} {erasure.cache_entries:>10}")
    if erasure.cache_error:
        print(f"error: {erasure.cache_error}; run the command again", file=sys.stderr)
        return 1
    return 0


async def namespaces_command(args: argparse.Namespace) -> int:
    """List namespaces' queues, or set one namespace's share of worker slots."""
    from ragsage.adapters.postgres.namespaces import queue_overview, set_overrides
    from ragsage.core.scopes import Scope
    from ragsage.runtime import build_database

    settings = Settings.from_env()
    default = settings.job_namespace_slots
    changes = {
        column: getattr(args, option)
        for option, (column, _) in _OPTIONS.items()
        if hasattr(args, option)
    }
    if args.action == "set" and not changes:
        print(f"error: name a setting to change ({', '.join(_flags())})", file=sys.stderr)
        return 2
    try:
        scope = Scope(args.namespace) if args.action == "set" else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    database = build_database(settings)
    try:
        async with database.owner_connection() as owner:
            if scope is not None:
                variable = database.config.isolation_variable
                await set_overrides(owner, variable, scope, changes)
                for column, value in changes.items():
                    fallback = getattr(settings, column.replace("_slots", "_namespace_slots"))
                    print(f"{scope.namespace}: {column} {_describe(value, fallback)}")
                return 0
            rows = await queue_overview(owner)
    finally:
        await database.dispose()
    print(f"{'namespace':32} {'queued':>8} {'running':>8}  job slots")
    for row in rows:
        slots = _describe(row.job_slots, default)
        print(f"{row.namespace:32} {row.queued:>8} {row.running:>8}  {slots}")
    return 0


def _variable(column: str) -> str:
    return "JOB_NAMESPACE_SLOTS" if column == "job_slots" else column.upper()


def _flags() -> list[str]:
    return ["--" + option.replace("_", "-") for option in _OPTIONS]


def register_namespaces(commands: Any) -> None:
    namespaces = commands.add_parser(
        "namespaces", help="the operator's view of namespaces and their overrides"
    )
    actions = namespaces.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="each namespace's jobs queued and running, and its slots")
    change = actions.add_parser(
        "set", help="override one namespace's settings (needs the database's credentials)"
    )
    change.add_argument("namespace")
    for option, (column, what) in _OPTIONS.items():
        change.add_argument(
            "--" + option.replace("_", "-"),
            type=_amount,
            default=argparse.SUPPRESS,
            help=f"{what}: a number (0: no limit) or 'default' for RAGSAGE_{_variable(column)}",
        )
    erase = actions.add_parser(
        "delete",
        help="erase a namespace: every row, stored byte, page, key and cached parse",
    )
    erase.add_argument("namespace")
    erase.add_argument("--yes", action="store_true", help="erase; without it, only show")
    erase.set_defaults(handler=delete_command, asynchronous=False)
    namespaces.set_defaults(handler=namespaces_command)
