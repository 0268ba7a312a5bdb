"""A :class:`~ragsage.ports.Cache` in one SQLite file, so embeddings outlive a run.

Wrapped around an embedder by :class:`~ragsage.embedding_cache.CachingEmbedder`
(which keys entries by model, input type and text), it lets the second
evaluation of a dataset skip embedding entirely.  Expiry is ignored on purpose:
a vector keyed by its model and text never goes stale.  Writes are committed in
batches, because one fsync per chunk would cost more than the embedding it saves.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType

from ragsage.embedding_cache import CachingEmbedder
from ragsage.ports import Embedder

_COMMIT_EVERY = 256


class SqliteCache:
    """String keys to string values in a local SQLite database."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT)")
        self._pending = 0

    async def get(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    async def set(self, key: str, value: str, *, ttl_seconds: int | None = None) -> None:
        self._db.execute("INSERT OR REPLACE INTO entries (key, value) VALUES (?, ?)", (key, value))
        self._pending += 1
        if self._pending >= _COMMIT_EVERY:
            self.flush()

    def flush(self) -> None:
        self._db.commit()
        self._pending = 0

    def close(self) -> None:
        self.flush()
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
    return CachingEmbedder(inner, cache), cache
