"""An embedded Postgres and Redis in a temporary folder, for benchmarks that need the services."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.settings import Settings


@dataclass(frozen=True)
class Stack:
    settings: Settings
    owner_url: str  # the database owner's URL, for reading across namespaces
    directory: Path


@contextmanager
def local_stack(database: str, **overrides: Any) -> Iterator[Stack]:
    """Start both servers, yield settings pointing at them (offline, 384-d), stop them after."""
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        postgres, redis = EmbeddedPostgres(base / "pg"), EmbeddedRedis(base / "redis")
        postgres.start()
        redis.start()
        try:
            owner = postgres.ensure_database(database)
            settings = Settings.from_env(
                {},
                database_url=owner,
                app_database_url=owner.replace("postgres@", "ragsage_app@", 1),
                redis_url=redis.url(0),
                # The peer's benchmark embeds with a hashing function, so ours does
                # too: the figures compare the engines, not the embedding models.
                **{"embedding_dim": 384, "embedder": "hashing", **overrides},
            )
            yield Stack(settings, owner, base)
        finally:
            redis.stop()
            postgres.stop()
