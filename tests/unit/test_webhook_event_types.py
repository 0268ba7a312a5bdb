"""The API's list of webhook event types is the engine's, so neither can gain one alone."""

from __future__ import annotations

from typing import get_args

from api.schemas.webhooks import WebhookEventType
from ragsage.core.webhooks import EVENT_TYPES


def test_the_request_schema_names_exactly_the_event_types_the_engine_writes() -> None:
    assert get_args(WebhookEventType) == tuple(EVENT_TYPES)
