"""Reachability checks and live counts for readiness and metrics."""

from __future__ import annotations

import logging

import redis
from sqlalchemy import text

from ragsage.adapters.celery.broker import queue_depths
from ragsage.runtime import Runtime
from ragsage.runtime.loop import LoopThread
from ragsage.settings import Settings

_log = logging.getLogger(__name__)


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
        async def read() -> dict[str, int]:
            async with self.runtime.database.system_session() as session:
                rows = await session.execute(
                    text("SELECT state, sum(jobs) FROM ragsage_job_counts() GROUP BY state")
                )
                return {str(row[0]): int(row[1]) for row in rows}

        try:
            return self.loop.run(read(), timeout=5)
        except Exception as exc:  # noqa: BLE001 - a scrape must not fail on one gauge
            _log.warning("job count for metrics failed: %s", type(exc).__name__)
            return {}

    def webhook_backlog(self) -> tuple[int, float] | None:
        """Deliveries waiting to be sent, and the age in seconds of the oldest one's event."""
        from ragsage.adapters.postgres.webhooks import backlog

        async def read() -> tuple[int, float]:
            async with self.runtime.database.system_session() as session:
                return await backlog(session)

        try:
            return self.loop.run(read(), timeout=5)
        except Exception as exc:  # noqa: BLE001 - a scrape must not fail on one gauge
            _log.warning("webhook backlog for metrics failed: %s", type(exc).__name__)
            return None
