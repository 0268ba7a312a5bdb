"""Reachability checks and live counts for readiness and metrics."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ragsage.runtime import Runtime
from ragsage.runtime.loop import LoopThread
from ragsage.runtime.serving import Readings
from ragsage.settings import Settings

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
_F = TypeVar("_F")


class Probes:
    """Short-timeout probes of the broker, the cache and the job table."""

    def __init__(self, settings: Settings, loop: LoopThread, runtime: Runtime) -> None:
        self.settings, self.loop, self.runtime = settings, loop, runtime
        self.readings = Readings(runtime, settings)

    def broker(self) -> bool:
        return self.readings.broker_up()

    def cache(self) -> bool:
        return self.readings.cache_up()

    def queue_depth(self) -> dict[str, int]:
        try:
            return self.readings.queue_depths()
        except Exception as exc:  # noqa: BLE001 - a scrape never fails on a gauge
            _log.warning("queue depth for metrics failed: %s", type(exc).__name__)
            return {}

    def job_counts(self) -> dict[str, int]:
        return self._read(self.readings.job_counts, {}, "job count")

    def webhook_backlog(self) -> tuple[int, float] | None:
        """Deliveries waiting to be sent, and the age in seconds of the oldest one's event."""
        return self._read(self.readings.webhook_backlog, None, "webhook backlog")

    def replicas(self) -> list[dict[str, Any]]:
        """Each read replica's state, checked now (empty without replicas)."""
        if not self.runtime.database.replicas:
            return []
        try:
            return self.loop.run(self.runtime.database.check_replicas(), timeout=5)
        except Exception as exc:  # noqa: BLE001 - a probe reports, never fails
            _log.warning("checking the replicas failed: %s", type(exc).__name__)
            return [{"name": "replicas", "up": False, "lag_seconds": None, "error": "unchecked"}]

    def _read(
        self, read: Callable[[], Coroutine[Any, Any, _T]], fallback: _F, what: str
    ) -> _T | _F:
        """One reading on the loop, or ``fallback``: a scrape never fails on a gauge."""
        try:
            return self.loop.run(read(), timeout=5)
        except Exception as exc:  # noqa: BLE001 - a scrape must not fail on one gauge
            _log.warning("%s for metrics failed: %s", what, type(exc).__name__)
            return fallback
