"""Webhooks as the rest of ragsage sees them: event types, endpoints and the retry schedule.

An event is written by the database in the transaction of the change it
reports (see ``sql/functions/publish_webhook_event.sql``); the workers deliver it at
least once to every endpoint that wants it, signed with the Standard Webhooks
scheme.  This module holds what needs no database and no network.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ragsage.core.errors import InvalidRequest
from ragsage.core.serialization import iso_or_none

# Every event a namespace can subscribe to, with what it reports.
EVENT_TYPES: dict[str, str] = {
    "job.succeeded": "a job finished and its document is searchable",
    "job.failed": "a job gave up; its error says why",
    "job.superseded": "a newer upload of the same document was stored first",
    "job.cancelled": "a job was cancelled before it finished",
    "document.deleted": "a document and everything stored for it were deleted",
    "reindex.switched": "a generation became the one searches read",
    "reindex.failed": "a re-index cannot switch: a document failed or the gate refused",
}
MAX_URL_LENGTH = 2048
# Keeps "not given" apart from an explicit None (an unbound endpoint).
UNCHANGED: Any = object()
DELIVERY_STATES = ("pending", "delivered", "failed")
MAX_DESCRIPTION_LENGTH = 500


def check_events(events: Sequence[str] | None) -> tuple[str, ...]:
    """The event types asked for, in a stable order; every type when None."""
    if events is None:
        return tuple(EVENT_TYPES)
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown:
        raise InvalidRequest(
            f"unknown webhook event type {unknown[0]!r}; known types: {', '.join(EVENT_TYPES)}"
        )
    if not events:
        raise InvalidRequest("a webhook needs at least one event type")
    wanted = set(events)
    return tuple(name for name in EVENT_TYPES if name in wanted)


@dataclass(frozen=True, slots=True)
class Webhook:
    """One endpoint of a namespace, as the API lists it (never its secret)."""

    id: str
    url: str
    events: tuple[str, ...]
    enabled: bool
    principals: tuple[str, ...] | None
    description: str
    disabled_reason: str | None
    failing_since: datetime | None
    previous_secret_until: datetime | None
    created_at: datetime
    updated_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "events": list(self.events),
            "enabled": self.enabled,
            "principals": None if self.principals is None else list(self.principals),
            "description": self.description,
            "disabled_reason": self.disabled_reason,
            "failing_since": iso_or_none(self.failing_since),
            "previous_secret_until": iso_or_none(self.previous_secret_until),
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event for one endpoint: where it stands and how its last attempt went."""

    event_id: str
    event_type: str
    event_created_at: datetime
    state: str
    attempts: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    last_status: int | None
    last_latency_ms: float | None
    last_error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "event_type": self.event_type,
            "event_created_at": self.event_created_at.isoformat(),
            "state": self.state,
            "attempts": self.attempts,
            "next_attempt_at": iso_or_none(self.next_attempt_at),
            "last_attempt_at": iso_or_none(self.last_attempt_at),
            "last_status": self.last_status,
            "last_latency_ms": (
                None if self.last_latency_ms is None else round(self.last_latency_ms, 1)
            ),
            "last_error": self.last_error,
        }


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    """Exponential backoff with jitter, until the first attempt is ``window`` seconds old.

    The n-th retry waits ``base * 2**(n-1)`` seconds, at most ``cap``, scaled by
    a random factor between one half and one (so endpoints that failed
    together do not retry together).  With the defaults (30 s, 4 h, 24 h)
    an event is tried about 13 times over a day.
    """

    base: float
    cap: float
    window: float

    def delay(self, attempts: int) -> float:
        """How long to wait after the ``attempts``-th failed attempt."""
        exponent = min(max(attempts - 1, 0), 60)
        ceiling = min(self.base * (2.0**exponent), self.cap)
        return ceiling * random.uniform(0.5, 1.0)

    def next_retry(self, attempts: int, first_attempt_at: datetime, now: datetime) -> float | None:
        """Seconds until the next attempt, or None when the schedule is spent."""
        wait = self.delay(attempts)
        if (now - first_attempt_at).total_seconds() + wait > self.window:
            return None
        return wait


def parse_id(value: str) -> uuid.UUID | None:
    """An endpoint id from a path; None when it is not one (so the caller answers 404)."""
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
