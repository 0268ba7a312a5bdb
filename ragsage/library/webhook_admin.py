"""Managing a namespace's webhook endpoints: what the API's admin routes and the CLI share.

Every change is checked here once (URL, event types, principals, how many
endpoints a namespace may have) and every new secret is made and sealed here,
so neither caller can store an endpoint the other would refuse.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import text

from ragsage.adapters.postgres import webhooks as store
from ragsage.core.errors import Conflict, InvalidRequest
from ragsage.core.types import Scope, check_principals
from ragsage.core.webhooks import (
    MAX_DESCRIPTION_LENGTH,
    MAX_URL_LENGTH,
    Delivery,
    Webhook,
    check_events,
)

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database
    from ragsage.adapters.sealing import Sealer
    from ragsage.settings import Settings

DELIVERY_STATES = ("pending", "delivered", "failed")
_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")


@dataclass(frozen=True, slots=True)
class Created:
    """A new endpoint and its secret, which is shown this once."""

    webhook: Webhook
    secret: str


@dataclass(frozen=True, slots=True)
class Rotated:
    secret: str
    previous_secret_until: datetime | None


class WebhookAdmin:
    """The endpoints of any namespace, through that namespace's own sessions."""

    def __init__(self, database: Database, settings: Settings) -> None:
        self.database, self.settings = database, settings

    def _sealer(self) -> Sealer:
        # Imported here: cryptography loads only where a secret is sealed.
        from ragsage.adapters.sealing import Sealer

        return Sealer(self.settings.sealing_keys)

    def _checked_url(self, url: str) -> str:
        from ragsage.adapters.webhooks.sender import check_url, is_address, refusal

        if len(url) > MAX_URL_LENGTH:
            raise InvalidRequest(f"a webhook URL is at most {MAX_URL_LENGTH} characters")
        try:
            host = check_url(url)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        # A literal address is judged now; a name is judged at each delivery,
        # after it is resolved (it may point elsewhere by then).
        if is_address(host) and not self.settings.webhook_allow_private:
            why = refusal(host)
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
        from ragsage.adapters.webhooks.signing import new_secret

        checked = self._checked_url(url)
        wanted = check_events(events)
        bound = _principals(principals)
        _check_description(description)
        sealer = self._sealer()
        secret = new_secret()
        async with self.database.session(scope) as session:
            # Counted and inserted in one transaction under the namespace's lock,
            # so two concurrent creations cannot both pass the limit.
            await session.execute(_LOCK, {"key": f"ragsage-webhooks/{scope.namespace}"})
            if await store.count_webhooks(session) >= self.settings.webhook_max_endpoints:
                raise Conflict(
                    f"namespace {scope.namespace!r} already has "
                    f"{self.settings.webhook_max_endpoints} webhooks, the most it may have "
                    "(RAGSAGE_WEBHOOK_MAX_ENDPOINTS); delete one first"
                )
            made = await store.create_webhook(
                session,
                scope.namespace,
                url=checked,
                events=wanted,
                sealed_secret=sealer.seal(secret),
                principals=bound,
                description=description,
                enabled=enabled,
            )
        return Created(made, secret)

    async def list_all(self, scope: Scope) -> list[Webhook]:
        async with self.database.session(scope) as session:
            return await store.list_webhooks(session)

    async def get(self, scope: Scope, webhook_id: uuid.UUID) -> Webhook | None:
        async with self.database.session(scope) as session:
            return await store.get_webhook(session, webhook_id)

    async def update(
        self,
        scope: Scope,
        webhook_id: uuid.UUID,
        *,
        url: str | None = None,
        events: Sequence[str] | None = None,
        enabled: bool | None = None,
        principals: Sequence[str] | None = store.UNCHANGED,
        description: str | None = None,
    ) -> Webhook | None:
        if url is not None:
            self._checked_url(url)
        checked_events = check_events(events) if events is not None else None
        bound = principals if principals is store.UNCHANGED else _principals(principals)
        if description is not None:
            _check_description(description)
        async with self.database.session(scope) as session:
            return await store.update_webhook(
                session,
                webhook_id,
                url=url,
                events=checked_events,
                enabled=enabled,
                principals=bound,
                description=description,
            )

    async def delete(self, scope: Scope, webhook_id: uuid.UUID) -> bool:
        async with self.database.session(scope) as session:
            return await store.delete_webhook(session, webhook_id)

    async def rotate(self, scope: Scope, webhook_id: uuid.UUID) -> Rotated | None:
        """A new secret; the old one keeps signing for RAGSAGE_WEBHOOK_ROTATION_GRACE."""
        from ragsage.adapters.webhooks.signing import new_secret

        sealer = self._sealer()
        secret = new_secret()
        grace = self.settings.webhook_rotation_grace
        async with self.database.session(scope) as session:
            if not await store.rotate_secret(session, webhook_id, sealer.seal(secret), grace):
                return None
            found = await store.get_webhook(session, webhook_id)
        return Rotated(secret, found.previous_secret_until if found else None)

    async def deliveries(
        self, scope: Scope, webhook_id: uuid.UUID, *, limit: int = 50, state: str | None = None
    ) -> list[Delivery] | None:
        if state is not None and state not in DELIVERY_STATES:
            raise InvalidRequest(f"state must be one of {', '.join(DELIVERY_STATES)}")
        async with self.database.session(scope) as session:
            if await store.get_webhook(session, webhook_id) is None:
                return None
            return await store.list_deliveries(session, webhook_id, limit=limit, state=state)

    async def replay(
        self, scope: Scope, webhook_id: uuid.UUID, since: datetime | None = None
    ) -> int | None:
        """Send an endpoint's undelivered events again; None if there is no such endpoint."""
        async with self.database.session(scope) as session:
            if await store.get_webhook(session, webhook_id) is None:
                return None
            return await store.replay(session, webhook_id, since)


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
