"""Writing to any :class:`~ragsage.core.ports.Cache`, with an expiry where it takes one."""

from __future__ import annotations

import inspect
from typing import Any, cast

from ragsage.core.ports import Cache


async def cache_write(cache: Cache, key: str, value: str, ttl_seconds: int | None) -> None:
    """Store ``value`` under ``key``, with its time to live where the cache takes one.

    The port asks only for ``set(key, value)``; a cache written to it that way
    must still receive every write, so the expiry goes only to a ``set`` whose
    signature has a ``ttl_seconds`` keyword (or takes any keyword).
    """
    if ttl_seconds is not None and _takes_ttl(cache):
        await cast(Any, cache).set(key, value, ttl_seconds=ttl_seconds)
    else:
        await cache.set(key, value)


def _takes_ttl(cache: Cache) -> bool:
    # The bound method, not the class's: a proxy that forwards through
    # __getattr__ has no set of its own.  A few microseconds beside a write.
    try:
        parameters = inspect.signature(cache.set).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        parameter.name == "ttl_seconds" or parameter.kind is parameter.VAR_KEYWORD
        for parameter in parameters
    )
