"""The process's database, cache and tracer, from the settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragsage.core.errors import ConfigurationError
from ragsage.core.ports import (
    Cache,
    Tracer,
)
from ragsage.core.tracing import LoggingTracer
from ragsage.settings import Settings

if TYPE_CHECKING:
    from ragsage.adapters.postgres import Database


def build_tracer(settings: Settings) -> Tracer:
    """OpenTelemetry spans when an OTLP endpoint is set, else span timings logged at DEBUG."""
    if not settings.otel_endpoint:
        return LoggingTracer()
    try:
        from ragsage.adapters.observability.otel import build_otel_tracer
    except ImportError as exc:
        raise ConfigurationError(
            "RAGSAGE_OTEL_ENDPOINT is set but OpenTelemetry is not installed: "
            "pip install 'ragsage[otel]'"
        ) from exc
    return build_otel_tracer(settings.otel_endpoint, settings.otel_service_name)


def build_database(settings: Settings) -> Database:
    """The Postgres pools the settings describe."""
    from ragsage.adapters.postgres import Database, PostgresConfig

    if not settings.database_url and not settings.app_database_url:
        raise ConfigurationError(
            "neither RAGSAGE_APP_DATABASE_URL nor RAGSAGE_DATABASE_URL is set; point them at "
            "Postgres 15+ with pgvector 0.8+ (or run `ragsage up`, which starts an embedded one)"
        )
    return Database(
        PostgresConfig(
            dsn=settings.database_url,
            app_dsn=settings.app_database_url or None,
            embedding_dim=settings.embedding_dim,
            embedding_widths=settings.indexed_widths(),
            text_search_config=settings.text_search_config,
            pool_size=settings.db_pool_size,
            graph_rows=settings.graph_rows,
            graph_ef_search=settings.graph_ef_search,
            hnsw_type=settings.hnsw_type,
            replica_dsns=settings.replica_urls(),
            replica_max_lag=settings.replica_max_lag,
        )
    )


def build_cache(settings: Settings) -> Cache | None:
    """The Redis parse cache, or None when no cache URL is configured."""
    if not settings.cache_redis_url:
        return None
    from ragsage.adapters.redis.redis import RedisCache

    # parse_cache_key already prefixes its keys ("ragsage:parse:...", per tenant).
    return RedisCache.from_url(settings.cache_redis_url, prefix="")
