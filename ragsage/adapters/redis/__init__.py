"""Cache adapters.  Importing this package loads the ``redis`` client library,
which is why the top-level ``ragsage`` package never does."""

from ragsage.adapters.redis.redis import (
    DEFAULT_COOLDOWN_SECONDS,
    DEFAULT_MAX_VALUE_BYTES,
    DEFAULT_TTL_SECONDS,
    RedisCache,
    redact_url,
)

__all__ = [
    "DEFAULT_COOLDOWN_SECONDS",
    "DEFAULT_MAX_VALUE_BYTES",
    "DEFAULT_TTL_SECONDS",
    "RedisCache",
    "redact_url",
]
