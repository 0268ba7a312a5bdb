"""What a serving process asks of its stores beyond the ports: the API's side of them.

The API names a storage failure in an error, lets a search read from a
replica, sets a namespace's search timeout, marks used sign-in codes and
reads live counts for its metrics; each is done here, by the adapters the
composition root chose, so the API imports no storage or queue adapter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ragsage.core.errors import RagsageError
from ragsage.core.replicas import ReadLog
from ragsage.runtime.container import Runtime
from ragsage.settings import Settings

if TYPE_CHECKING:
    import redis

    from ragsage.adapters.redis.once import FirstMarks
    from ragsage.adapters.redis.refusals import RefusalCounts

_log = logging.getLogger(__name__)


def storage_failure(exc: BaseException) -> RagsageError | None:
    """The error tree's word for a database failure in ``exc`` or its causes; None if none."""
    from ragsage.adapters.postgres.sessions import database_failure

    return database_failure(exc)


@contextmanager
def replica_reads(log: ReadLog) -> Iterator[ReadLog]:
    """Let the reads in this block go to a replica, noting in ``log`` who answered."""
    from ragsage.adapters.postgres.replicas import replica_reads as marked

    with marked(log) as noted:
        yield noted


def set_search_timeout(runtime: Runtime, namespace: str, milliseconds: int) -> None:
    """The statement timeout of ``namespace``'s searches from now on (0: the sessions' own)."""
    if milliseconds:
        runtime.database.read_timeouts[namespace] = milliseconds
    else:
        runtime.database.read_timeouts.pop(namespace, None)


def used_marks(settings: Settings, prefix: str) -> FirstMarks:
    """Marks only the first caller sets, in the broker's Redis (which never evicts)."""
    from ragsage.adapters.redis.once import FirstMarks

    return FirstMarks(settings.redis_url, prefix)


def refusal_counts(client: redis.Redis, on_error: Callable[[BaseException], None]) -> RefusalCounts:
    """Each namespace's refused requests, counted in the limits' Redis through ``client``."""
    from ragsage.adapters.redis.refusals import RefusalCounts

    return RefusalCounts(client, on_error)


class Readings:
    """Live counts for metrics: queued messages, jobs by state, the webhook backlog."""

    def __init__(self, runtime: Runtime, settings: Settings, timeout: float = 0.5) -> None:
        import redis

        self.runtime = runtime
        self._queue = settings.queue()
        timeouts = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
        self._broker = redis.Redis.from_url(settings.redis_url, **timeouts)
        self._cache = (
            redis.Redis.from_url(settings.cache_redis_url, **timeouts)
            if settings.cache_redis_url
            else None
        )

    def broker_up(self) -> bool:
        """Whether the broker answers a ping (a failure is logged, never raised)."""
        return _answers(self._broker)

    def cache_up(self) -> bool:
        """Whether the parse cache is configured and answers a ping."""
        return self._cache is not None and _answers(self._cache)

    def queue_depths(self) -> dict[str, int]:
        """Messages waiting in each queue; raises ``redis.RedisError`` or ``OSError`` when
        the broker cannot answer."""
        from ragsage.adapters.celery.broker import queue_depths

        return queue_depths(self._broker, self._queue)

    async def job_counts(self) -> dict[str, int]:
        from ragsage.adapters.postgres.jobs.store import job_counts

        async with self.runtime.database.system_session() as session:
            return await job_counts(session)

    async def webhook_backlog(self) -> tuple[int, float]:
        """Deliveries waiting, and the age in seconds of the oldest one's event."""
        from ragsage.adapters.postgres.webhooks import backlog

        async with self.runtime.database.system_session() as session:
            return await backlog(session)

    def close(self) -> None:
        self._broker.close()
        if self._cache is not None:
            self._cache.close()


def _answers(client: redis.Redis) -> bool:
    import redis

    try:
        return bool(client.ping())
    except (redis.RedisError, OSError) as exc:
        _log.warning("redis probe failed: %s", type(exc).__name__)
        return False
