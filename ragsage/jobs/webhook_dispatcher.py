"""Sending webhook deliveries: a loop in each worker's main process.

The schedule lives in the database (each delivery's ``next_attempt_at``), so a
retry hours away costs nothing in the broker, and any worker can send any
delivery.  A round claims due deliveries across namespaces (first ones of
every endpoint before second ones, at most ``webhook_endpoint_concurrency``
of one endpoint at a time), sends each in a task of its own and records how it
went.  A slow or dead endpoint holds only its own few slots, each for at most
``webhook_timeout``, so it delays neither another namespace's deliveries nor
the ingestion queue, whose jobs run in the pool children.

Rounds run when an event commits (the trigger's NOTIFY), when a send ends,
and every ``webhook_poll_interval`` in any case: notifications are a shortcut,
never the only way work is found (they do not pass a transaction-mode
PgBouncer, and a dispatcher that was down missed them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import psycopg

from ragsage.adapters.postgres import webhooks as store
from ragsage.adapters.postgres.database import CONNECT_TIMEOUT_SECONDS
from ragsage.adapters.sealing import sealer_or_none
from ragsage.adapters.webhooks.sender import Sender, SendResult
from ragsage.adapters.webhooks.signing import sign
from ragsage.core.errors import ConfigurationError
from ragsage.core.webhooks import RetrySchedule

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database
    from ragsage.settings import Settings

_log = logging.getLogger(__name__)

CHANNEL = "ragsage_webhooks"
USER_AGENT = "ragsage-webhooks/1"
# How often the dispatcher purges old events (seconds).
_PURGE_EVERY = 600.0
# Outcomes a round reports: delivered, retry, failed, disabled, stale.
Observe = Callable[[str], None]


def event_body(claimed: store.Claimed) -> bytes:
    """What a receiver gets: the event's id, type, time, namespace and the object's fields."""
    return json.dumps(
        {
            "id": str(claimed.event_id),
            "type": claimed.event_type,
            "timestamp": claimed.event_created_at.isoformat(),
            "namespace": claimed.namespace,
            "data": claimed.data,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")


class Dispatcher:
    """Claims due deliveries, sends them, and records each outcome."""

    def __init__(
        self,
        database: Database,
        settings: Settings,
        *,
        sender: Sender | None = None,
        observe: Observe | None = None,
    ) -> None:
        self.database, self.settings = database, settings
        self.sender = sender or Sender(
            timeout=settings.webhook_timeout,
            allow_private=settings.webhook_allow_private,
            max_connections=settings.webhook_concurrency,
        )
        self.schedule = RetrySchedule(
            base=settings.webhook_retry_base,
            cap=settings.webhook_retry_cap,
            window=settings.webhook_retry_window,
        )
        # Without the operator's keys nothing can be signed: such a worker claims
        # nothing (see run), rather than failing every endpoint it touches.
        self.sealer = sealer_or_none(settings.sealing_keys)
        self.observe = observe or (lambda _outcome: None)
        # A claim stays the sender's long enough to time out and record; a
        # dispatcher that dies mid-send leaves the delivery due again after it.
        self.lease = 2 * settings.webhook_timeout + 5.0
        self.outcomes: Counter[str] = Counter()
        self._in_flight: Counter[UUID] = Counter()
        self._namespaces: Counter[str] = Counter()
        self._tasks: set[asyncio.Task[None]] = set()
        self.finished = threading.Event()
        self._wake = asyncio.Event()
        # Records and claims share the process's pool (RAGSAGE_DB_POOL_SIZE and as
        # many again in overflow) with the watchdog: at most four at a time, so a
        # burst of fast failures leaves room for it and for the next claim.
        self._database_turns = asyncio.Semaphore(4)
        self._last_purge = 0.0

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        """Dispatch until cancelled; sends in progress end (or time out) before it returns."""
        if self.sealer is None:
            _log.warning("webhooks are not sent by this worker: RAGSAGE_SEALING_KEYS is not set")
            self.finished.set()
            return
        listener = asyncio.create_task(self._listen())
        try:
            while True:
                # Cleared before the round: a send ending during it wakes the next one.
                self._wake.clear()
                try:
                    await self.round()
                    await self._housekeeping()
                except Exception as exc:  # noqa: BLE001 - the next round tries again
                    _log.warning("webhook round failed: %s", _reason(exc))
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for loses a
                # cancellation that lands as the event is set, and the dispatcher
                # then ran on for ever after its worker asked it to stop.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.webhook_poll_interval):
                        await self._wake.wait()
        finally:
            listener.cancel()
            with contextlib.suppress(BaseException):
                await listener
            await self.drain(self.settings.webhook_timeout + 1.0)
            await self.sender.aclose()
            self.finished.set()

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the sends in progress."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def round(self) -> int:
        """Claim what is due and start sending it; how many deliveries were claimed."""
        free = self.settings.webhook_concurrency - sum(self._in_flight.values())
        if free <= 0:
            return 0
        async with self._database_turns, self.database.system_session() as system:
            claimed = await store.claim_deliveries(
                system,
                free,
                per_endpoint=self.settings.webhook_endpoint_concurrency,
                per_namespace=self.settings.webhook_namespace_concurrency,
                busy_hooks=dict(self._in_flight),
                busy_namespaces=dict(self._namespaces),
                lease=self.lease,
            )
        for delivery in claimed:
            self._in_flight[delivery.webhook_id] += 1
            self._namespaces[delivery.namespace] += 1
            task = asyncio.create_task(self._deliver(delivery))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return len(claimed)

    async def _deliver(self, claimed: store.Claimed) -> None:
        try:
            result = await self._send(claimed)
            outcome = await self._record(claimed, result)
            self.outcomes[outcome] += 1
            self.observe(outcome)
            if outcome in ("failed", "disabled") and result is not None:
                _log.warning(
                    "webhook %s of %s gave up on event %s: %s%s",
                    claimed.webhook_id,
                    claimed.namespace,
                    claimed.event_id,
                    result.error,
                    "; the endpoint is disabled" if outcome == "disabled" else "",
                )
        except Exception as exc:  # noqa: BLE001 - the claim runs out and it is sent again
            _log.warning(
                "webhook delivery of event %s could not be recorded: %s",
                claimed.event_id,
                type(exc).__name__,
            )
        finally:
            _release(self._in_flight, claimed.webhook_id)
            _release(self._namespaces, claimed.namespace)
            self._wake.set()

    async def _send(self, claimed: store.Claimed) -> SendResult | None:
        """The attempt's result; None when this worker cannot sign it (the operator's keys)."""
        try:
            secrets = self._secrets(claimed)
        except ConfigurationError as exc:
            _log.error("webhook %s cannot be signed here: %s", claimed.webhook_id, exc)
            return None
        body = event_body(claimed)
        sent_at = datetime.now(UTC)
        message_id = str(claimed.event_id)
        headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "webhook-id": message_id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": sign(secrets, message_id, sent_at, body),
        }
        return await self.sender.post(claimed.url, body, headers)

    def _secrets(self, claimed: store.Claimed) -> list[str]:
        if self.sealer is None:
            raise ConfigurationError("RAGSAGE_SEALING_KEYS is not set on this worker")
        secrets = [self.sealer.open(claimed.sealed_secret)]
        if claimed.previous_sealed_secret is not None:
            secrets.append(self.sealer.open(claimed.previous_sealed_secret))
        return secrets

    async def _record(self, claimed: store.Claimed, result: SendResult | None) -> str:
        retry_in: float | None = None
        if result is None:
            # Handed back uncounted: another worker (or this one, fixed) signs it later.
            outcome, retry_in = "unsent", self.settings.webhook_poll_interval * 6
            result = SendResult(status=None, latency_ms=0.0, error=None)
        elif result.delivered:
            outcome = "delivered"
        else:
            retry_in = self.schedule.next_retry(
                claimed.attempt, claimed.first_attempt_at, datetime.now(UTC)
            )
            outcome = "failed" if retry_in is None else "retry"
        async with self._database_turns, self.database.system_session() as system:
            return await store.record_delivery(
                system,
                claimed,
                outcome=outcome,
                status=result.status,
                latency_ms=result.latency_ms,
                error=result.error,
                retry_in=retry_in,
            )

    async def _housekeeping(self) -> None:
        now = time.monotonic()
        if now - self._last_purge < _PURGE_EVERY:
            return
        self._last_purge = now
        async with self._database_turns, self.database.system_session() as system:
            purged = await store.purge_events(
                system, self.settings.webhook_retention, self.settings.webhook_undelivered_retention
            )
        if purged:
            _log.info("purged %d webhook events past their retention", purged)

    async def _listen(self) -> None:
        """Wake a round whenever an event commits; reconnect after a lost connection."""
        dsn = self.database.config.scoped_dsn
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
                ) as connection:
                    await connection.execute(f"LISTEN {CHANNEL}")
                    self._wake.set()  # anything committed while not listening
                    async for _ in connection.notifies():
                        self._wake.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - polling covers the gap
                _log.debug("webhook listener: %s; polling until it reconnects", exc)
            await asyncio.sleep(self.settings.webhook_poll_interval)


def _release(counts: Counter[Any], key: Any) -> None:
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]


def _reason(exc: BaseException) -> str:
    """An error's kind and the first line of the database's own words (never its SQL)."""
    cause = getattr(exc, "orig", None) or exc
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    return f"{type(cause).__name__}: {first[:200]}" if first else type(cause).__name__
