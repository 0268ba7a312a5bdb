"""``ragsage webhooks``: a namespace's webhook endpoints, from the operator's shell.

The same checks and the same sealing as the API's admin routes
(:mod:`ragsage.management.webhooks`); secrets are printed once, on stdout,
with what they are for on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ragsage.core.scopes import Scope
from ragsage.core.webhooks import EVENT_TYPES, UNCHANGED, parse_id
from ragsage.settings import Settings

if TYPE_CHECKING:
    from ragsage.management.webhooks import Webhooks


async def webhooks_command(args: argparse.Namespace) -> int:
    if args.action == "new-operator-key":
        from ragsage.adapters.sealing import new_operator_key

        print(new_operator_key())
        print("(a Fernet key for RAGSAGE_SEALING_KEYS; keep it with your secrets)", file=sys.stderr)
        return 0
    from ragsage.runtime import build_database
    from ragsage.runtime.management import build_management

    settings = Settings.from_env()
    database = build_database(settings)
    admin = build_management(database, settings).webhooks
    scope = Scope(args.namespace)
    try:
        if args.action == "create":
            return await _create(admin, scope, args)
        if args.action == "list":
            return await _list(admin, scope)
        identifier = parse_id(args.webhook_id)
        done = identifier is not None and await _ONE[args.action](admin, scope, identifier, args)
        if not done:
            print(f"error: no webhook {args.webhook_id!r} in {scope.namespace!r}", file=sys.stderr)
            return 1
        return 0
    finally:
        await database.dispose()


async def _create(admin: Webhooks, scope: Scope, args: argparse.Namespace) -> int:
    made = await admin.create(
        scope,
        url=args.url,
        events=_events(args.event),
        principals=args.principal or None,
        description=args.description,
        enabled=not args.disabled,
    )
    print(made.secret)
    print(
        f"(the signing secret of webhook {made.webhook.id} in {scope.namespace!r}, "
        "shown only once)",
        file=sys.stderr,
    )
    return 0


async def _list(admin: Webhooks, scope: Scope) -> int:
    for hook in await admin.list_all(scope):
        state = "enabled" if hook.enabled else "disabled"
        why = f"  ({hook.disabled_reason})" if hook.disabled_reason else ""
        bound = f"  principals: {', '.join(hook.principals)}" if hook.principals else ""
        print(f"{hook.id}  {state:8}  {hook.url}  {','.join(hook.events)}{bound}{why}")
    return 0


async def _update(admin: Webhooks, scope: Scope, hook: UUID, args: argparse.Namespace) -> bool:
    found = await admin.update(
        scope,
        hook,
        url=args.url,
        events=_events(args.event),
        enabled=args.enabled,
        principals=None if args.unbind else (args.principal or UNCHANGED),
        description=args.description,
    )
    if found is not None:
        print(json.dumps(found.to_dict(), indent=2))
    return found is not None


async def _delete(admin: Webhooks, scope: Scope, hook: UUID, args: argparse.Namespace) -> bool:
    if not await admin.delete(scope, hook):
        return False
    print(f"deleted {hook}")
    return True


async def _rotate(admin: Webhooks, scope: Scope, hook: UUID, args: argparse.Namespace) -> bool:
    rotated = await admin.rotate(scope, hook)
    if rotated is None:
        return False
    print(rotated.secret)
    until = rotated.previous_secret_until
    grace = (
        f"deliveries carry the old one's signature too until {until.isoformat()}"
        if until
        else "the old one stops now"
    )
    print(f"(the new signing secret, shown only once; {grace})", file=sys.stderr)
    return True


async def _deliveries(admin: Webhooks, scope: Scope, hook: UUID, args: argparse.Namespace) -> bool:
    found = await admin.deliveries(scope, hook, limit=args.limit, state=args.state)
    if found is None:
        return False
    for delivery in found:
        status = delivery.last_status if delivery.last_status is not None else "-"
        print(
            f"{delivery.event_id}  {delivery.event_type:17}  {delivery.state:9}  "
            f"attempts {delivery.attempts}  status {status}  {delivery.last_error or ''}".rstrip()
        )
    return True


async def _replay(admin: Webhooks, scope: Scope, hook: UUID, args: argparse.Namespace) -> bool:
    scheduled = await admin.replay(scope, hook, args.since)
    if scheduled is None:
        return False
    print(f"scheduled {scheduled} undelivered events of {hook} again")
    return True


_ONE: dict[str, Callable[[Webhooks, Scope, UUID, argparse.Namespace], Awaitable[bool]]] = {
    "update": _update,
    "delete": _delete,
    "rotate-secret": _rotate,
    "deliveries": _deliveries,
    "replay": _replay,
}


def _events(given: list[str] | None) -> list[str] | None:
    if not given:
        return None
    return [name.strip() for part in given for name in part.split(",") if name.strip()]


def register_webhooks(commands: Any) -> None:
    hooks = commands.add_parser("webhooks", help="manage a namespace's webhook endpoints")
    actions = hooks.add_subparsers(dest="action", required=True)
    event_help = f"an event type (repeatable, or comma-separated): {', '.join(EVENT_TYPES)}"

    create = actions.add_parser("create", help="add an endpoint (its secret is printed once)")
    create.add_argument("--namespace", required=True)
    create.add_argument("--url", required=True)
    create.add_argument("--event", action="append", help=event_help + "; default: every type")
    create.add_argument(
        "--principal",
        action="append",
        metavar="NAME",
        help="bind the endpoint (repeatable): only events about documents these may read",
    )
    create.add_argument("--description", default="")
    create.add_argument("--disabled", action="store_true", help="create it switched off")

    listing = actions.add_parser("list", help="list a namespace's endpoints")
    listing.add_argument("--namespace", required=True)

    update = actions.add_parser("update", help="change an endpoint")
    update.add_argument("webhook_id")
    update.add_argument("--namespace", required=True)
    update.add_argument("--url")
    update.add_argument("--event", action="append", help=event_help)
    update.add_argument("--principal", action="append", metavar="NAME")
    update.add_argument("--unbind", action="store_true", help="receive every event again")
    update.add_argument("--description")
    switch = update.add_mutually_exclusive_group()
    switch.add_argument("--enable", dest="enabled", action="store_const", const=True)
    switch.add_argument("--disable", dest="enabled", action="store_const", const=False)

    for name, text in (
        ("delete", "delete an endpoint and its deliveries"),
        ("rotate-secret", "give an endpoint a new secret (printed once)"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("webhook_id")
        action.add_argument("--namespace", required=True)

    deliveries = actions.add_parser("deliveries", help="an endpoint's recent deliveries")
    deliveries.add_argument("webhook_id")
    deliveries.add_argument("--namespace", required=True)
    deliveries.add_argument("--limit", type=int, default=50)
    deliveries.add_argument("--state", choices=("pending", "delivered", "failed"))

    replay = actions.add_parser("replay", help="send an endpoint's undelivered events again")
    replay.add_argument("webhook_id")
    replay.add_argument("--namespace", required=True)
    replay.add_argument(
        "--since", type=datetime.fromisoformat, help="only events from then on (ISO 8601)"
    )

    actions.add_parser("new-operator-key", help="print a new key for RAGSAGE_SEALING_KEYS")
    hooks.set_defaults(handler=webhooks_command)
