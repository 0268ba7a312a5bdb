"""Marks in Redis that only the first caller can set: "this happened once" for a while.

Unlike :class:`~ragsage.adapters.redis.RedisCache`, this adapter fails hard:
a mark that could not be set must not read as "set by us", or a one-time
thing could happen twice.  The marks belong on a Redis that never evicts
(the broker's, ``maxmemory-policy noeviction``), so one is never forgotten
before it expires.
"""

from __future__ import annotations

import redis

from ragsage.core.errors import MarksUnavailable


class FirstMarks:
    """Names marked under one prefix in Redis, each for a given number of seconds.

    Construction opens no connection; the first :meth:`first` does.
    """

    def __init__(self, url: str, prefix: str, timeout: float = 2.0) -> None:
        self._prefix = prefix
        self._client: redis.Redis = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )

    def first(self, name: str, keep_for: int) -> bool:
        """Mark ``name`` for ``keep_for`` seconds: True if it was not marked already.

        One ``SET NX EX``: of two processes marking the same name at once,
        exactly one is told it was first.
        """
        try:
            made = self._client.set(f"{self._prefix}{name}", b"1", nx=True, ex=keep_for)
        except (redis.RedisError, OSError) as exc:
            raise MarksUnavailable(f"Redis could not be reached ({type(exc).__name__})") from None
        return bool(made)

    def close(self) -> None:
        self._client.close()
