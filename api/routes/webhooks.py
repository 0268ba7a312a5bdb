"""Webhook endpoints of the key's namespace (admin keys): docs/webhooks.md."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from flask import Blueprint, Response, request

from api import convert
from api.auth import require
from api.documented import Reply, documented, ok, query_int, query_text
from api.errors import ApiError
from api.routes.common import int_arg, json_body, optional_json_body
from api.schemas.webhooks import (
    DeliveryList,
    DeliveryOut,
    ReplayOut,
    ReplayRequest,
    WebhookCreate,
    WebhookCreated,
    WebhookList,
    WebhookOut,
    WebhookSecretOut,
    WebhookUpdate,
)
from api.services import services
from ragsage.core.keys import Principal, Role
from ragsage.core.webhooks import DELIVERY_STATES, UNCHANGED, Webhook, parse_id
from ragsage.management.webhooks import Webhooks

blueprint = Blueprint("webhooks", __name__)
_STATES = {"type": "string", "enum": list(DELIVERY_STATES)}


def _admin() -> tuple[Principal, Webhooks]:
    who = require(Role.ADMIN)
    here = services()
    return who, here.runtime.management.webhooks


def _configured() -> None:
    if not services().settings.sealing_keys.strip():
        raise ApiError(
            503,
            "webhooks_not_configured",
            "webhooks are not configured on this server: the operator sets "
            "RAGSAGE_SEALING_KEYS to seal their secrets",
        )


def _id(raw: str) -> UUID:
    found = parse_id(raw)
    if found is None:
        raise _missing(raw)
    return found


def _out(webhook: Webhook) -> WebhookOut:
    return WebhookOut(**webhook.to_dict())


def _missing(raw: str) -> ApiError:
    return ApiError(404, "not_found", f"no webhook {raw!r}")


def _no_store(response: Response) -> Response:
    response.headers["Cache-Control"] = "no-store"
    return response


@blueprint.get("/v1/webhooks")
@documented("The namespace's webhook endpoints (admin keys)", ok(WebhookList))
def list_all() -> Any:
    who, admin = _admin()
    found = services().run(admin.list_all(who.scope))
    return convert.dump(WebhookList(webhooks=[_out(w) for w in found]))


@blueprint.post("/v1/webhooks")
@documented(
    "Add a webhook endpoint; its signing secret is shown only in this reply (admin keys)",
    ok(WebhookCreated, status=201),
    body=WebhookCreate,
    errors=(400, 401, 403, 409, 413, 415, 422, 503),
)
def create() -> Any:
    who, admin = _admin()
    body = json_body(WebhookCreate)
    _configured()
    made = services().run(
        admin.create(
            who.scope,
            url=body.url,
            events=body.events,
            principals=body.principals,
            description=body.description,
            enabled=body.enabled,
        )
    )
    reply = convert.dump(WebhookCreated(**made.webhook.to_dict(), secret=made.secret))
    reply.status_code = 201
    return _no_store(reply)


@blueprint.get("/v1/webhooks/<webhook_id>")
@documented("One webhook endpoint (admin keys)", ok(WebhookOut))
def get_one(webhook_id: str) -> Any:
    who, admin = _admin()
    found = services().run(admin.get(who.scope, _id(webhook_id)))
    if found is None:
        raise _missing(webhook_id)
    return convert.dump(_out(found))


@blueprint.patch("/v1/webhooks/<webhook_id>")
@documented(
    "Change a webhook endpoint: URL, events, principals, description, enabled (admin keys)",
    ok(WebhookOut),
    body=WebhookUpdate,
)
def update(webhook_id: str) -> Any:
    who, admin = _admin()
    identifier = _id(webhook_id)
    body = json_body(WebhookUpdate)
    given = body.model_fields_set
    found = services().run(
        admin.update(
            who.scope,
            identifier,
            url=body.url,
            events=body.events,
            enabled=body.enabled,
            principals=body.principals if "principals" in given else UNCHANGED,
            description=body.description,
        )
    )
    if found is None:
        raise _missing(webhook_id)
    return convert.dump(_out(found))


@blueprint.delete("/v1/webhooks/<webhook_id>")
@documented("Delete a webhook endpoint and its deliveries (admin keys)", Reply(204, "deleted"))
def delete(webhook_id: str) -> Any:
    who, admin = _admin()
    if not services().run(admin.delete(who.scope, _id(webhook_id))):
        raise _missing(webhook_id)
    return Response(status=204)


@blueprint.post("/v1/webhooks/<webhook_id>/secret")
@documented(
    "Rotate an endpoint's signing secret: the new one is shown only now, and deliveries carry "
    "both signatures for RAGSAGE_WEBHOOK_ROTATION_GRACE (admin keys)",
    ok(WebhookSecretOut),
)
def rotate(webhook_id: str) -> Any:
    who, admin = _admin()
    identifier = _id(webhook_id)
    _configured()
    rotated = services().run(admin.rotate(who.scope, identifier))
    if rotated is None:
        raise _missing(webhook_id)
    return _no_store(
        convert.dump(
            WebhookSecretOut(
                id=str(identifier),
                secret=rotated.secret,
                previous_secret_until=rotated.previous_secret_until,
            )
        )
    )


@blueprint.get("/v1/webhooks/<webhook_id>/deliveries")
@documented(
    "An endpoint's recent deliveries, newest event first: state, attempts, the last status, "
    "latency and error (admin keys)",
    ok(DeliveryList),
    query=(query_int("limit", 1, 200), query_text("state", _STATES)),
)
def deliveries(webhook_id: str) -> Any:
    who, admin = _admin()
    identifier = _id(webhook_id)
    limit = int_arg("limit", 50, 1, 200)
    state = request.args.get("state") or None
    found = services().run(admin.deliveries(who.scope, identifier, limit=limit, state=state))
    if found is None:
        raise _missing(webhook_id)
    return convert.dump(DeliveryList(deliveries=[DeliveryOut(**d.to_dict()) for d in found]))


@blueprint.post("/v1/webhooks/<webhook_id>/replay")
@documented(
    "Send an endpoint's undelivered events again, from now (admin keys)",
    ok(ReplayOut),
    body=ReplayRequest,
)
def replay(webhook_id: str) -> Any:
    who, admin = _admin()
    identifier = _id(webhook_id)
    body = optional_json_body(ReplayRequest, ReplayRequest())
    scheduled = services().run(admin.replay(who.scope, identifier, body.since))
    if scheduled is None:
        raise _missing(webhook_id)
    return convert.dump(ReplayOut(scheduled=scheduled))
