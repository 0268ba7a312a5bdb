"""CLI commands that act on a configured ragsage deployment (``RAGSAGE_*`` settings)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragsage.settings import Settings


async def migrate_command(args: argparse.Namespace) -> int:
    """Create or upgrade the schema of ``RAGSAGE_DATABASE_URL``."""
    # Imported here: the database stack loads only for commands that need it.
    from ragsage.adapters.postgres import redact
    from ragsage.adapters.postgres.keys import migrate_and_seal
    from ragsage.adapters.sealing import sealer_or_none
    from ragsage.runtime import build_database

    settings = Settings.from_env()
    sealer = sealer_or_none(settings.sealing_keys)
    database = build_database(settings)
    try:
        version, sealed = await migrate_and_seal(database, sealer)
    finally:
        await database.dispose()
    print(f"schema at version {version} on {redact(settings.database_url)}")
    if sealed:
        print(f"sealed {sealed} delegate keys' signing secrets stored in plaintext")
    if sealer is None:
        print(
            "RAGSAGE_SEALING_KEYS is not set: delegate keys cannot be made, and any signing "
            "secret stored before schema version 36 stays unusable until it is sealed",
            file=sys.stderr,
        )
    return 0


async def graphs_command(args: argparse.Namespace) -> int:
    """Give the largest namespaces HNSW graphs of their own and drop those outgrown."""
    from ragsage.adapters.postgres.graphs import maintain_graphs
    from ragsage.runtime import build_database

    settings = Settings.from_env()
    database = build_database(settings)
    try:
        done = await maintain_graphs(database)
    finally:
        await database.dispose()
    if done is None:
        print("another `ragsage graphs` is running; nothing done", file=sys.stderr)
        return 1
    for change in done.changes:
        if change.action == "dropped":
            print(f"dropped {change.name}")
            continue
        what = f"{change.namespace} ({change.chunks} chunks of width {change.width})"
        if change.action == "built":
            size = change.size_bytes / 2**20
            print(f"built {change.name} for {what} in {change.seconds:.1f} s, {size:.1f} MiB")
        elif change.action == "failed":
            print(f"failed {change.name} for {what}: {change.error}")
        else:
            print(f"kept {change.name} for {what}")
    if not done.changes:
        print(f"no namespace holds {settings.graph_rows} chunks of one width; no graph wanted")
    return 1 if done.of("failed") else 0


async def keys_command(args: argparse.Namespace) -> int:
    """Create, list or revoke API keys of one namespace, or rotate a delegate key's secret."""
    if args.action == "sign-in-link":
        return sign_in_link_command(args)
    from ragsage.adapters.postgres.keys import (
        create_key,
        list_keys,
        revoke_key,
        rotate_signing_secret,
    )
    from ragsage.adapters.sealing import sealer_or_none
    from ragsage.core.errors import ConfigurationError, InvalidRequest
    from ragsage.core.keys import Role
    from ragsage.core.scopes import Scope
    from ragsage.runtime import build_database

    settings = Settings.from_env()
    sealer = sealer_or_none(settings.sealing_keys)
    database = build_database(settings)
    scope = Scope(args.namespace)
    try:
        async with database.session(scope) as session:
            if args.action == "create":
                try:
                    made = await create_key(
                        session, scope, Role(args.role), args.name, args.principal or (), sealer
                    )
                except (InvalidRequest, ConfigurationError) as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 2
                print(made.key)
                if made.signing_secret:
                    print(f"signing secret (key id {made.id}): {made.signing_secret}")
                bound = f", bound to {', '.join(sorted(args.principal))}" if args.principal else ""
                print(
                    f"(a {args.role} key for namespace {scope.namespace!r}{bound}; "
                    "it is shown only once)",
                    file=sys.stderr,
                )
                return 0
            if args.action == "rotate-secret":
                try:
                    secret = await rotate_signing_secret(session, args.key_id, sealer)
                except ConfigurationError as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 2
                if secret is None:
                    print(
                        f"error: no live delegate key {args.key_id!r} in {scope.namespace!r}",
                        file=sys.stderr,
                    )
                    return 1
                print(secret)
                print(
                    "(the new signing secret, shown only once; restricted keys signed with the "
                    "old one are refused within RAGSAGE_RESTRICTED_KEY_RECHECK seconds)",
                    file=sys.stderr,
                )
                return 0
            if args.action == "revoke":
                if await revoke_key(session, args.key_id):
                    print(f"revoked {args.key_id}")
                    return 0
                print(f"error: no live key {args.key_id!r} in {scope.namespace!r}", file=sys.stderr)
                return 1
            for info in await list_keys(session):
                state = f"revoked {info.revoked_at:%Y-%m-%d}" if info.revoked_at else "live"
                bound = f"  principals: {', '.join(info.principals)}" if info.principals else ""
                print(f"{info.id}  {info.role.value:8}  {state:18}  {info.name}{bound}")
            return 0
    finally:
        await database.dispose()


def sign_in_link_command(args: argparse.Namespace) -> int:
    """Print a link that signs the web page in once with a key read from a file or stdin.

    The key is never an argument (a command line is visible to every user of
    the machine), and the link carries a one-time code, not the key.  No
    database is asked: the page's ``GET /v1/key`` says whether the key is live.
    """
    from ragsage.adapters.sealing import Sealer
    from ragsage.core.errors import ConfigurationError
    from ragsage.management.sign_in import SignInCodes, sign_in_link

    source = Path(args.key_file).read_text() if args.key_file else sys.stdin.read()
    key = source.strip()
    if not key or any(c.isspace() for c in key):
        print(
            "error: give one API key (or restricted key), alone, on stdin or in --key-file",
            file=sys.stderr,
        )
        return 2
    try:
        codes = SignInCodes(Sealer(Settings.from_env().sealing_keys))
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(sign_in_link(args.url, codes.make(key)))
    print(
        f"(signs the page at {args.url} in once, within {codes.minutes} minutes; "
        "the page says whose key it is before it replaces one already signed in)",
        file=sys.stderr,
    )
    return 0


def register_keys(commands: Any) -> None:
    keys = commands.add_parser("keys", help="manage API keys")
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="create a key (printed once)")
    create.add_argument("--namespace", required=True)
    create.add_argument(
        "--role",
        choices=("read", "write", "delegate", "admin"),
        default="write",
        help="delegate: a write key that also issues restricted keys (its signing secret "
        "is printed once, beside the key)",
    )
    create.add_argument("--name", default="")
    create.add_argument(
        "--principal",
        action="append",
        metavar="NAME",
        help="bind the key to a principal (repeatable): it then reads only documents "
        "open to the namespace or listing one of its principals",
    )
    rotate = actions.add_parser(
        "rotate-secret", help="give a delegate key a new signing secret (printed once)"
    )
    rotate.add_argument("key_id")
    rotate.add_argument("--namespace", required=True)
    revoke = actions.add_parser(
        "revoke", help="revoke a key by its id (a delegate key's restricted keys with it)"
    )
    revoke.add_argument("key_id")
    revoke.add_argument("--namespace", required=True)
    listing = actions.add_parser("list", help="list a namespace's keys")
    listing.add_argument("--namespace", required=True)
    link = actions.add_parser(
        "sign-in-link",
        help="print a link that signs the web page in once with a key you hold "
        "(read from stdin or --key-file; needs RAGSAGE_SEALING_KEYS)",
    )
    link.add_argument("--url", default="http://127.0.0.1:8000", help="the API's address")
    link.add_argument("--key-file", help="a file holding the key (default: stdin)")
    keys.set_defaults(handler=keys_command)
