"""A :class:`~ragsage.core.ports.Cache` in one SQLite file, so embeddings outlive a run.

Wrapped around an embedder by :class:`~ragsage.adapters.embedding_cache.CachingEmbedder`
(which keys entries by model, input type and text), it lets the second
evaluation of a dataset skip embedding entirely.  Expiry is ignored on purpose:
a vector keyed by its model and text never goes stale.  Several runs may share
the file at once, so every write commits at once (holding a write transaction
open across an embedding batch would lock the others out); in WAL mode with
``synchronous=NORMAL`` such a commit costs no fsync.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType

from ragsage.adapters.embedding_cache import CachingEmbedder
from ragsage.core.ports import Embedder


class SqliteCache:
    """String keys to string values in a local SQLite database."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT)")

    async def get(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    async def set(self, key: str, value: str, *, ttl_seconds: int | None = None) -> None:
        # Autocommit (isolation_level=None): the statement is its own transaction.
        self._db.execute("INSERT OR REPLACE INTO entries (key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteCache:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def cached_embedder(inner: Embedder, cache_dir: str | Path) -> tuple[CachingEmbedder, SqliteCache]:
    """``inner`` behind a cache in ``cache_dir/embeddings.sqlite3``; close the cache after."""
    cache = SqliteCache(Path(cache_dir) / "embeddings.sqlite3")
    return CachingEmbedder(inner, cache, per_namespace=False), cache
