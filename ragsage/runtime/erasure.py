"""The operator's end of a tenant: erase a namespace whole, and say what went.

    from ragsage.runtime.erasure import erase_namespace
    erasure = erase_namespace(Settings.from_env(), "acme")
    erasure.rows  # {"ragsage_chunks": 7939, "ragsage_jobs": 242, ...}

It needs the database's own credentials (``RAGSAGE_DATABASE_URL``), as
``ragsage namespaces delete`` does: no API key can end a tenant.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import redis

from ragsage.adapters.embedding_cache import embed_cache_prefix
from ragsage.adapters.postgres.namespaces import delete_namespace_rows, namespace_rows
from ragsage.adapters.redis.keys import refused_requests_key
from ragsage.core.scopes import Scope
from ragsage.runtime.infrastructure import build_database
from ragsage.settings import Settings


@dataclass(frozen=True, slots=True)
class Erasure:
    """What an erasure removed (or, before it runs, would remove)."""

    namespace: str
    rows: dict[str, int] = field(default_factory=dict)
    cache_entries: int = 0
    # Set when the cache could not be reached: its entries expire on their own
    # (RAGSAGE_PARSE_CACHE_TTL; cached vectors after 30 days), but until then they remain.
    cache_error: str | None = None

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())


def erase_namespace(settings: Settings, namespace: str) -> Erasure:
    """Delete every row, stored byte, page, key, cached parse and cached vector of ``namespace``.

    Running jobs of the namespace stop at their next heartbeat and write
    nothing (their rows are gone); queued ones never start.  Other namespaces
    are untouched.
    """
    scope = Scope(namespace)
    rows = asyncio.run(_delete_rows(settings, scope))
    entries, error = _delete_cache_entries(settings, scope)
    return Erasure(namespace, rows, entries, error)


def preview_erasure(settings: Settings, namespace: str) -> Erasure:
    """What :func:`erase_namespace` would remove from the database, removing nothing."""
    scope = Scope(namespace)
    return Erasure(namespace, asyncio.run(_count_rows(settings, scope)))


async def _delete_rows(settings: Settings, scope: Scope) -> dict[str, int]:
    database = build_database(settings)
    try:
        async with database.owner_connection() as owner:
            variable = database.config.isolation_variable
            return await delete_namespace_rows(owner, variable, scope)
    finally:
        await database.dispose()


async def _count_rows(settings: Settings, scope: Scope) -> dict[str, int]:
    database = build_database(settings)
    try:
        async with database.owner_connection() as owner:
            return await namespace_rows(owner, database.config.isolation_variable, scope)
    finally:
        await database.dispose()


def _delete_cache_entries(settings: Settings, scope: Scope) -> tuple[int, str | None]:
    removed, error = _delete_usage_counters(settings, scope), None
    if not settings.cache_redis_url:
        return removed, error
    client = redis.Redis.from_url(settings.cache_redis_url, socket_timeout=10)
    try:
        for pattern in _cache_patterns(scope):
            batch: list[bytes] = []
            for key in client.scan_iter(match=pattern, count=1000):
                if not _owned_by(key.decode(errors="replace"), scope):
                    continue
                batch.append(key)
                if len(batch) >= 500:
                    removed += int(client.delete(*batch))
                    batch = []
            if batch:
                removed += int(client.delete(*batch))
    except (redis.RedisError, OSError) as exc:
        return removed, f"the cache could not be reached ({type(exc).__name__})"
    finally:
        client.close()
    return removed, None


def _cache_patterns(scope: Scope) -> tuple[str, ...]:
    """The cache entries kept per namespace, as patterns (a namespace holds no glob character).

    Parses (:mod:`ragsage.ingestion.parse_cache`) end in
    ":{namespace}:{content hash}"; cached vectors (:mod:`ragsage.adapters.embedding_cache`)
    begin with the namespace in braces.
    """
    return (f"ragsage:parse:*:{scope.namespace}:*", f"{embed_cache_prefix(scope.namespace)}*")


def _owned_by(key: str, scope: Scope) -> bool:
    """Whether a key the patterns found is the namespace's own.

    A namespace may hold ':', so the parse pattern of ``eu`` also finds the
    entries of ``acme:eu``; the parse key's fields before the namespace (prefix,
    version, parser fingerprint) hold none, which tells the two apart.
    """
    if not key.startswith("ragsage:parse:"):
        return True  # a vector's key names its namespace in braces: the pattern was exact
    namespace_and_hash = key.split(":", 4)[4]
    return namespace_and_hash.rsplit(":", 1)[0] == scope.namespace


def _delete_usage_counters(settings: Settings, scope: Scope) -> int:
    """The API's count of the namespace's refused requests (rate windows expire on their own)."""
    url = settings.limits_url()
    client = redis.Redis.from_url(url, socket_timeout=10)
    try:
        return int(client.delete(refused_requests_key(scope.namespace)))
    except (redis.RedisError, OSError):
        return 0  # nothing but counts, and the next erasure run removes them
    finally:
        client.close()
