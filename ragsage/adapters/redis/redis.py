"""The :class:`~ragsage.core.ports.Cache` port over Redis, built to fail soft.

The engine treats its cache as optional (an empty or wrong cache costs time,
never correctness), so this adapter never raises to its caller: a Redis that is
down, slow, out of memory or holding the wrong type under a key reads as a miss
and swallows writes, with one WARNING log line saying why.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ResponseError

_log = logging.getLogger(__name__)

DEFAULT_TTL_SECONDS: Final = 7 * 24 * 3600
"""Lifetime of an entry written without one: long enough to skip re-parsing a
week of re-uploads, short enough that no key outlives its usefulness forever."""

DEFAULT_MAX_VALUE_BYTES: Final = 16 * 1024 * 1024
DEFAULT_COOLDOWN_SECONDS: Final = 5.0


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` and the query string dropped."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        credentials, _, host = netloc.rpartition("@")
        user, has_password, _ = credentials.partition(":")
        netloc = f"{user}:***@{host}" if has_password else f"{user}@{host}"
    # Query parameters may carry a password too (``?password=...``); none of
    # them helps an operator read a log line, so they all go.
    return urlunsplit(parts._replace(netloc=netloc, query="", fragment=""))


class RedisCache:
    """A string cache in Redis that degrades to a miss instead of failing.

    Every entry gets a TTL (``default_ttl_seconds`` when the caller passes
    none), so the cache cannot grow without bound even on a Redis with no
    ``maxmemory``.  Values larger than ``max_value_bytes`` are not written.

    After failing to reach Redis the adapter stops calling it for ``cooldown_seconds``:
    when Redis is unreachable every call would otherwise wait out a timeout,
    so a worker parsing a thousand documents would pay a thousand timeouts and
    log a thousand identical lines.  The first call after the cooldown tries
    again.  Failures are logged at most once per window, and the log names
    the server by a URL with its password masked.

    Construction opens no connection; the first ``get`` or ``set`` does.  Like
    the redis client under it, an instance serves one event loop at a time:
    await :meth:`close` before that loop ends, and the next loop may use it
    again (a Celery task running ``asyncio.run`` per job does exactly this).
    """

    def __init__(
        self,
        client: Redis,
        *,
        prefix: str = "ragsage:",
        default_ttl_seconds: int = DEFAULT_TTL_SECONDS,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS,
        call_timeout_seconds: float = 1.0,
        label: str = "redis",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if default_ttl_seconds <= 0:
            raise ValueError("default_ttl_seconds must be positive")
        self._client = client
        self._prefix = prefix
        self._default_ttl = default_ttl_seconds
        self._max_value_bytes = max_value_bytes
        self._cooldown = cooldown_seconds
        # Covers the whole call, so an injected client without socket timeouts
        # still cannot stall the pipeline.
        self._call_timeout = call_timeout_seconds
        self._label = label
        self._clock = clock
        self._skip_until = float("-inf")
        self._quiet_until = float("-inf")

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        socket_timeout: float = 0.5,
        prefix: str = "ragsage:",
        default_ttl_seconds: int = DEFAULT_TTL_SECONDS,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS,
    ) -> RedisCache:
        """A cache over a ``redis://`` (or ``rediss://``, ``unix://``) URL."""
        client = Redis.from_url(
            url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_timeout,
            # redis-py retries three times with backoff by default; for a cache
            # a failed call is a miss, and retrying only multiplies the wait.
            retry=Retry(NoBackoff(), 0),
            decode_responses=False,
        )
        return cls(
            client,
            prefix=prefix,
            default_ttl_seconds=default_ttl_seconds,
            max_value_bytes=max_value_bytes,
            cooldown_seconds=cooldown_seconds,
            call_timeout_seconds=2 * socket_timeout + 0.1,
            label=redact_url(url),
        )

    async def get(self, key: str) -> str | None:
        """The value under ``key``, or ``None`` on a miss or any failure."""
        if self._cooling_down():
            return None
        try:
            async with asyncio.timeout(self._call_timeout):
                raw = await self._client.get(self._prefix + key)
        except Exception as exc:  # every failure means "no cached value"; see class docstring
            self._failed("get", exc)
            return None
        if raw is None:
            return None
        if not isinstance(raw, bytes):
            # An injected client built with decode_responses=True hands back str.
            return str(raw)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            _log.warning(
                "cache entry %r in %s is not UTF-8; treating it as a miss", key, self._label
            )
            return None

    async def set(self, key: str, value: str, *, ttl_seconds: int | None = None) -> None:
        """Store ``value`` under ``key`` for ``ttl_seconds`` (the default TTL if ``None``).

        A non-positive TTL stores nothing: such an entry could never be read.
        """
        ttl = self._default_ttl if ttl_seconds is None else ttl_seconds
        if ttl <= 0:
            return
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (from a broken text layer, say) have no UTF-8 form.
            _log.warning("not caching %r: the value is not encodable as UTF-8", key)
            return
        if len(data) > self._max_value_bytes:
            _log.warning(
                "not caching %r: %d bytes exceeds the %d-byte limit",
                key,
                len(data),
                self._max_value_bytes,
            )
            return
        if self._cooling_down():
            return
        try:
            async with asyncio.timeout(self._call_timeout):
                await self._client.set(self._prefix + key, data, ex=ttl)
        except Exception as exc:  # a lost write only costs a future recomputation
            self._failed("set", exc)

    async def close(self) -> None:
        """Close the connections; the cache reconnects if it is used again."""
        try:
            await self._client.aclose()
        except Exception as exc:  # closing a broken connection must not fail shutdown
            _log.warning("closing the cache at %s failed: %s", self._label, type(exc).__name__)

    def _cooling_down(self) -> bool:
        return self._clock() < self._skip_until

    def _failed(self, operation: str, exc: Exception) -> None:
        now = self._clock()
        # A ResponseError (wrong type under a key, out of memory, read-only
        # replica) is the server answering promptly: it costs no timeout, so it
        # does not stop the other keys from being tried.  Anything else means
        # the connection is in trouble and every call would wait it out.
        trips = not isinstance(exc, ResponseError)
        if trips:
            self._skip_until = now + self._cooldown
        # Calls failing together land here one after another; only the first
        # of a window logs.
        if now < self._quiet_until:
            return
        self._quiet_until = now + self._cooldown
        _log.warning(
            "cache %s at %s failed (%s: %s)%s",
            operation,
            self._label,
            type(exc).__name__,
            self._scrub(str(exc)),
            f"; skipping the cache for {self._cooldown:g}s" if trips else "",
        )

    def _scrub(self, message: str) -> str:
        """``message`` with the client's password removed, should an error quote it."""
        kwargs = getattr(getattr(self._client, "connection_pool", None), "connection_kwargs", {})
        password = kwargs.get("password") if isinstance(kwargs, dict) else None
        if isinstance(password, str) and password:
            message = message.replace(password, "***")
        return message
