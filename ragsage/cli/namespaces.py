"""``ragsage namespaces``: the operator's view of every namespace, and its overrides.

It needs the database's own credentials (``RAGSAGE_DATABASE_URL``, the owner),
not an API key: no tenant's key can raise its own share.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragsage.settings import Settings


def _slots(value: str) -> int | None:
    if value == "default":
        return None
    try:
        slots = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of slots (0: no cap) or 'default'; got {value!r}"
        ) from None
    if slots < 0:
        raise argparse.ArgumentTypeError("slots must be 0 (no cap) or more")
    return slots


def _describe(slots: int | None, default: int) -> str:
    if slots is None:
        return f"default ({default or 'no cap'})"
    return str(slots) if slots else "no cap"


async def namespaces_command(args: argparse.Namespace) -> int:
    """List namespaces' queues, or set one namespace's share of worker slots."""
    from ragsage.adapters.postgres.namespaces import queue_overview, set_job_slots
    from ragsage.core.types import Scope
    from ragsage.runtime import build_database

    settings = Settings.from_env()
    database = build_database(settings)
    default = settings.job_namespace_slots
    try:
        async with database.owner_connection() as owner:
            if args.action == "set":
                try:
                    scope = Scope(args.namespace)
                except ValueError as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 2
                variable = database.config.isolation_variable
                await set_job_slots(owner, variable, scope, args.job_slots)
                shown = _describe(args.job_slots, default)
                print(f"{scope.namespace}: job slots {shown}")
                return 0
            rows = await queue_overview(owner)
    finally:
        await database.dispose()
    print(f"{'namespace':32} {'queued':>8} {'running':>8}  job slots")
    for row in rows:
        slots = _describe(row.job_slots, default)
        print(f"{row.namespace:32} {row.queued:>8} {row.running:>8}  {slots}")
    return 0


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
    change.add_argument(
        "--job-slots",
        type=_slots,
        required=True,
        help=(
            "jobs it runs at once while other namespaces wait: a number (0: no cap), "
            "or 'default' for RAGSAGE_JOB_NAMESPACE_SLOTS"
        ),
    )
    namespaces.set_defaults(handler=namespaces_command)
