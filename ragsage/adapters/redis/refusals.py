"""Requests refused by a rate limit, counted per namespace and limit in Redis.

The API's limits refuse a request at once; the count is added later by a
thread of its own, so a flood never waits on Redis for its tally.  The hash
is named by :func:`~ragsage.adapters.redis.keys.refused_requests_key`, which
erasing a namespace deletes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import redis

from ragsage.adapters.redis.keys import refused_requests_key


class RefusalCounts:
    """Each namespace's refusals by limit, added to Redis by a thread of their own.

    A flood's refusals are answered without waiting on Redis for their count:
    this thread sends what has piled up since its last round in one pipeline.
    """

    def __init__(self, client: redis.Redis, on_error: Callable[[BaseException], None]) -> None:
        self._client, self._on_error = client, on_error
        self._pending: Counter[tuple[str, str]] = Counter()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def add(self, namespace: str, limit_name: str) -> None:
        with self._changed:
            self._pending[(namespace, limit_name)] += 1
            if self._thread is None:  # started here, not before gunicorn forks
                self._thread = threading.Thread(
                    target=self._run, name="ragsage-refusals", daemon=True
                )
                self._thread.start()
            self._changed.notify()

    def flush(self) -> None:
        """Send what is pending now (raises what Redis raises)."""
        with self._changed:
            taken, self._pending = self._pending, Counter()
        if not taken:
            return
        pipeline = self._client.pipeline(transaction=False)
        for (namespace, limit_name), count in taken.items():
            pipeline.hincrby(refused_requests_key(namespace), limit_name, count)
        pipeline.execute()

    def counts(self, namespace: str) -> dict[str, int]:
        """Every refusal of ``namespace`` so far by limit (this process's pending ones sent
        first); raises what Redis raises."""
        self.flush()
        counts = self._client.hgetall(refused_requests_key(namespace))
        return {
            name.decode() if isinstance(name, bytes) else str(name): int(count)
            for name, count in counts.items()
        }

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify()
        if self._thread is not None:
            self._thread.join(2)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending or self._stopping)
                if self._stopping and not self._pending:
                    return
            try:
                self.flush()
            except (redis.RedisError, OSError) as exc:
                self._on_error(exc)  # those counts are lost, as the limits fail open
