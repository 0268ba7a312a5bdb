"""Reachability checks and live counts for readiness and metrics."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.celery.broker import queue_depths
from ragsage.adapters.postgres.webhooks import backlog
from ragsage.runtime import Runtime
from ragsage.runtime.loop import LoopThread
from ragsage.settings import Settings

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
_F = TypeVar("_F")


class Probes:
    """Short-timeout probes of the broker, the cache and the job table."""

    def __init__(self, settings: Settings, loop: LoopThread, runtime: Runtime) -> None:
        self.settings, self.loop, self.runtime = settings, loop, runtime
        timeouts = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5}
        self._broker = redis.Redis.from_url(settings.redis_url, **timeouts)
        self._queue = settings.queue()
        self._cache = (
            redis.Redis.from_url(settings.cache_redis_url, **timeouts)
            if settings.cache_redis_url
            else None
        )

    def broker(self) -> bool:
        return self._ping(self._broker)

    def cache(self) -> bool:
        return self._cache is not None and self._ping(self._cache)

    @staticmethod
    def _ping(client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError) as exc:
            _log.warning("redis probe failed: %s", type(exc).__name__)
            return False

    def queue_depth(self) -> dict[str, int]:
        try:
            return queue_depths(self._broker, self._queue)
        except (redis.RedisError, OSError):
            return {}

    def job_counts(self) -> dict[str, int]:
        async def read(session: AsyncSession) -> dict[str, int]:
            rows = await session.execute(
                text("SELECT state, sum(jobs) FROM ragsage_job_counts() GROUP BY state")
            )
            return {str(row[0]): int(row[1]) for row in rows}

        return self._system_read(read, {}, "job count")

    def webhook_backlog(self) -> tuple[int, float] | None:
        """Deliveries waiting to be sent, and the age in seconds of the oldest one's event."""
        return self._system_read(backlog, None, "webhook backlog")

    def replicas(self) -> list[dict[str, Any]]:
        """Each read replica's state, checked now (empty without replicas)."""
        if not self.runtime.database.replicas:
            return []
        try:
            return self.loop.run(self.runtime.database.check_replicas(), timeout=5)
        except Exception as exc:  # noqa: BLE001 - a probe reports, never fails
            _log.warning("checking the replicas failed: %s", type(exc).__name__)
            return [{"name": "replicas", "up": False, "lag_seconds": None, "error": "unchecked"}]

    def _system_read(
        self, read: Callable[[AsyncSession], Awaitable[_T]], fallback: _F, what: str
    ) -> _T | _F:
        """One read through a system session, or ``fallback``: a scrape never fails on a gauge."""

        async def run() -> _T:
            async with self.runtime.database.system_session() as session:
                return await read(session)

        try:
            return self.loop.run(run(), timeout=5)
        except Exception as exc:  # noqa: BLE001 - a scrape must not fail on one gauge
            _log.warning("%s for metrics failed: %s", what, type(exc).__name__)
            return fallback
