"""Managing a namespace's webhook endpoints: what the API's admin routes and the CLI share.

Every change is checked here once (URL, event types, principals, how many
endpoints a namespace may have) and every new secret is made and sealed here,
so neither caller can store an endpoint the other would refuse.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ragsage.core.errors import Conflict, InvalidRequest
from ragsage.core.management_ports import ReceiverGuard, WebhookFields, WebhookRecords
from ragsage.core.scopes import Scope, check_principals
from ragsage.core.sealing import Seals
from ragsage.core.webhooks import (
    DELIVERY_STATES,
    MAX_DESCRIPTION_LENGTH,
    MAX_URL_LENGTH,
    UNCHANGED,
    Delivery,
    Webhook,
    check_events,
)


@dataclass(frozen=True, slots=True)
class WebhookRules:
    """The operator's limits on endpoints (RAGSAGE_WEBHOOK_*)."""

    max_endpoints: int
    allow_private: bool
    rotation_grace: float


@dataclass(frozen=True, slots=True)
class Created:
    """A new endpoint and its secret, which is shown this once."""

    webhook: Webhook
    secret: str


@dataclass(frozen=True, slots=True)
class Rotated:
    secret: str
    previous_secret_until: datetime | None


class Webhooks:
    """The endpoints of any namespace, each call scoped to the caller's namespace.

    ``new_secret`` makes a signing secret; ``sealer`` gives the operator's
    sealing key (called only when a secret is sealed, so a deployment without
    one can still list and delete endpoints).
    """

    def __init__(
        self,
        records: WebhookRecords,
        rules: WebhookRules,
        guard: ReceiverGuard,
        new_secret: Callable[[], str],
        sealer: Callable[[], Seals],
    ) -> None:
        self._records, self._rules, self._guard = records, rules, guard
        self._new_secret, self._sealer = new_secret, sealer

    def _checked_url(self, url: str) -> str:
        if len(url) > MAX_URL_LENGTH:
            raise InvalidRequest(f"a webhook URL is at most {MAX_URL_LENGTH} characters")
        try:
            host = self._guard.host_of(url)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        why = None if self._rules.allow_private else self._guard.refusal(host)
        if why is not None:
            raise InvalidRequest(
                f"the webhook URL points at {host}, {why}; private targets are not allowed "
                "here (RAGSAGE_WEBHOOK_ALLOW_PRIVATE)"
            )
        return url

    async def create(
        self,
        scope: Scope,
        *,
        url: str,
        events: Sequence[str] | None = None,
        principals: Sequence[str] | None = None,
        description: str = "",
        enabled: bool = True,
    ) -> Created:
        checked = self._checked_url(url)
        wanted = check_events(events)
        bound = _principals(principals)
        _check_description(description)
        sealer = self._sealer()
        secret = self._new_secret()
        fields = WebhookFields(checked, wanted, sealer.seal(secret), bound, description, enabled)
        most = self._rules.max_endpoints
        made = await self._records.create(scope, fields, most)
        if made is None:
            raise Conflict(
                f"namespace {scope.namespace!r} already has {most} webhooks, the most it may "
                "have (RAGSAGE_WEBHOOK_MAX_ENDPOINTS); delete one first"
            )
        return Created(made, secret)

    async def list_all(self, scope: Scope) -> list[Webhook]:
        return await self._records.list_webhooks(scope)

    async def get(self, scope: Scope, webhook_id: uuid.UUID) -> Webhook | None:
        return await self._records.get_webhook(scope, webhook_id)

    async def update(
        self,
        scope: Scope,
        webhook_id: uuid.UUID,
        *,
        url: str | None = None,
        events: Sequence[str] | None = None,
        enabled: bool | None = None,
        principals: Sequence[str] | None = UNCHANGED,
        description: str | None = None,
    ) -> Webhook | None:
        if url is not None:
            self._checked_url(url)
        checked_events = check_events(events) if events is not None else None
        bound = principals if principals is UNCHANGED else _principals(principals)
        if description is not None:
            _check_description(description)
        return await self._records.update_webhook(
            scope,
            webhook_id,
            url=url,
            events=checked_events,
            enabled=enabled,
            principals=bound,
            description=description,
        )

    async def delete(self, scope: Scope, webhook_id: uuid.UUID) -> bool:
        return await self._records.delete_webhook(scope, webhook_id)

    async def rotate(self, scope: Scope, webhook_id: uuid.UUID) -> Rotated | None:
        """A new secret; the old one keeps signing for RAGSAGE_WEBHOOK_ROTATION_GRACE."""
        secret = self._new_secret()
        sealed = self._sealer().seal(secret)
        found = await self._records.rotate_secret(
            scope, webhook_id, sealed, self._rules.rotation_grace
        )
        return None if found is None else Rotated(secret, found.previous_secret_until)

    async def deliveries(
        self, scope: Scope, webhook_id: uuid.UUID, *, limit: int = 50, state: str | None = None
    ) -> list[Delivery] | None:
        if state is not None and state not in DELIVERY_STATES:
            raise InvalidRequest(f"state must be one of {', '.join(DELIVERY_STATES)}")
        return await self._records.list_deliveries(scope, webhook_id, limit=limit, state=state)

    async def replay(
        self, scope: Scope, webhook_id: uuid.UUID, since: datetime | None = None
    ) -> int | None:
        """Send an endpoint's undelivered events again; None if there is no such endpoint."""
        return await self._records.replay(scope, webhook_id, since)


def _principals(principals: Sequence[str] | None) -> list[str] | None:
    if principals is None:
        return None
    names = sorted(check_principals(list(principals), "a webhook's principals"))
    if not names:
        raise InvalidRequest(
            "a webhook bound to principals names at least one; leave principals out (null) "
            "for one that receives every event of the namespace"
        )
    return names


def _check_description(description: str) -> None:
    if len(description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidRequest(f"a description is at most {MAX_DESCRIPTION_LENGTH} characters")
