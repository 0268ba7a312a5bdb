"""The bodies of webhook endpoints and their deliveries (:mod:`api.routes.webhooks`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from api.schemas.common import PrincipalName
from ragsage.core.scopes import MAX_PRINCIPALS
from ragsage.query.requests import Strict, Timestamp

WebhookEventType = Literal[
    "job.succeeded",
    "job.failed",
    "job.superseded",
    "job.cancelled",
    "document.deleted",
    "reindex.switched",
    "reindex.failed",
]
_EVENTS_FIELD = (
    "The event types posted to the endpoint; every type when left out. The body of each "
    "is {id, type, timestamp, namespace, data}, data holding the fields the API returns for "
    "the job, document or generation (docs/webhooks.md)."
)
_PRINCIPALS_FIELD = (
    "Bind the endpoint to principals: it then receives events about documents open to the "
    "whole namespace or listing one of them. null: every event of the namespace."
)


class WebhookCreate(Strict):
    url: str = Field(
        max_length=2048,
        description="Where events are posted (https:// or http://). By default it may not "
        "resolve to a loopback, private, link-local or metadata address.",
    )
    events: list[WebhookEventType] | None = Field(
        default=None, min_length=1, max_length=7, description=_EVENTS_FIELD
    )
    principals: list[PrincipalName] | None = Field(
        default=None, min_length=1, max_length=MAX_PRINCIPALS, description=_PRINCIPALS_FIELD
    )
    description: str = Field(default="", max_length=500)
    enabled: bool = True


class WebhookUpdate(Strict):
    """Only the fields given change; enabling a disabled endpoint clears its failure."""

    url: str | None = Field(default=None, max_length=2048)
    events: list[WebhookEventType] | None = Field(default=None, min_length=1, max_length=7)
    principals: list[PrincipalName] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_PRINCIPALS,
        description="A list binds the endpoint; null unbinds it; left out, unchanged.",
    )
    description: str | None = Field(default=None, max_length=500)
    enabled: bool | None = None


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[str]
    enabled: bool
    principals: list[str] | None
    description: str
    disabled_reason: str | None = Field(
        description="Why the workers disabled the endpoint (it kept failing); replay its "
        "undelivered events once it is fixed and enabled again."
    )
    failing_since: datetime | None
    previous_secret_until: datetime | None = Field(
        description="Until then deliveries carry a signature with the previous secret too."
    )
    created_at: datetime
    updated_at: datetime


class WebhookCreated(WebhookOut):
    secret: str = Field(
        description="The endpoint's signing secret (whsec_...), for standardwebhooks or svix; "
        "shown only now."
    )


class WebhookList(BaseModel):
    webhooks: list[WebhookOut]


class WebhookSecretOut(BaseModel):
    id: str
    secret: str = Field(description="The new signing secret; shown only now.")
    previous_secret_until: datetime | None = Field(
        description="Deliveries carry both signatures until then."
    )


class DeliveryOut(BaseModel):
    event_id: str
    event_type: str
    event_created_at: datetime
    state: Literal["pending", "delivered", "failed"]
    attempts: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    last_status: int | None = Field(description="The receiver's HTTP status; null: no answer.")
    last_latency_ms: float | None
    last_error: str | None


class DeliveryList(BaseModel):
    deliveries: list[DeliveryOut]


class ReplayRequest(Strict):
    since: Timestamp | None = Field(
        default=None, description="Only events from then on; every undelivered one if left out."
    )


class ReplayOut(BaseModel):
    scheduled: int = Field(description="Undelivered events scheduled to be sent again now.")
