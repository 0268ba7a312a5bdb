"""An embedder that remembers vectors by (model, text), so repeated work is free.

A retried job, a re-index run twice, or the same boilerplate paragraph in a
thousand documents pays for each distinct text once.  The key includes the
namespace, the reader's principal set, the model and the input type, so vectors
never leak between models and one tenant's cached vectors are neither another's faster answer (which
would tell it what the first had embedded) nor left behind when the first is
erased (``ragsage namespaces delete`` removes its entries); values are
float32 bytes, base64-encoded, which is what pgvector stores anyway.  Like the
parse cache, a missing or damaged entry is only a miss.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import logging
from array import array
from collections.abc import Sequence

from ragsage.core.cache_writes import cache_write
from ragsage.core.namespaced import READS_ALL
from ragsage.core.ports import Cache, Embedder, InputType

_log = logging.getLogger(__name__)
# 2: entries are kept per namespace.
EMBED_CACHE_VERSION = 2


def embed_cache_prefix(namespace: str | None) -> str:
    """How every cached vector of ``namespace`` begins (braces: a namespace may hold ':')."""
    owner = "-" if namespace is None else f"{{{namespace}}}"
    return f"ragsage:embed:v{EMBED_CACHE_VERSION}:{owner}:"


class CachingEmbedder:
    """Wraps an embedder; only texts the cache has no vector for reach it."""

    def __init__(
        self,
        inner: Embedder,
        cache: Cache,
        *,
        ttl_seconds: int = 30 * 24 * 3600,
        namespace: str | None = None,
        per_namespace: bool = True,
        reader: str = READS_ALL,
    ):
        self.inner, self.cache, self.ttl_seconds = inner, cache, ttl_seconds
        # None: work of no namespace (the library's own embed calls, evaluations).
        self.namespace = namespace
        # False for a cache one person keeps for themselves (an evaluation's, on disk),
        # whose throwaway namespaces would otherwise miss it on every run.
        self.per_namespace = per_namespace
        # Whom a namespace's searches read for (its principal set, by name): the
        # questions one reader asked answer no faster for a reader of another set.
        self.reader = reader
        self.hits = 0
        self.misses = 0

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def similarity_floor(self) -> float:
        return self.inner.similarity_floor

    def for_namespace(self, namespace: str, reader: str = READS_ALL) -> CachingEmbedder:
        """The same cache, holding ``namespace``'s vectors (and ``reader``'s) apart."""
        if not self.per_namespace:
            return self
        return CachingEmbedder(
            self.inner,
            self.cache,
            ttl_seconds=self.ttl_seconds,
            namespace=namespace,
            reader=reader,
        )

    def key(self, text: str, input_type: InputType) -> str:
        digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
        owner = embed_cache_prefix(self.namespace)
        return f"{owner}{self.reader}:{self.model}:{input_type}:{digest}"

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]:
        keys = [self.key(text, input_type) for text in texts]
        found = await asyncio.gather(*(self._get(key) for key in keys))
        missing = [i for i, vector in enumerate(found) if vector is None]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            fresh = await self.inner.embed([texts[i] for i in missing], input_type=input_type)
            for i, vector in zip(missing, fresh, strict=True):
                found[i] = tuple(vector)
            await asyncio.gather(*(self._set(keys[i], found[i]) for i in missing))
        return [vector for vector in found if vector is not None]

    async def _get(self, key: str) -> tuple[float, ...] | None:
        try:
            payload = await self.cache.get(key)
        except Exception as exc:  # noqa: BLE001 - the cache may fail; embedding may not
            _log.warning("embedding cache read failed: %s", type(exc).__name__)
            return None
        if payload is None:
            return None
        try:
            values = array("f")
            values.frombytes(base64.b64decode(payload, validate=True))
        except (binascii.Error, ValueError):
            return None
        return tuple(values) if len(values) == self.dimension else None

    async def _set(self, key: str, vector: tuple[float, ...] | None) -> None:
        if vector is None:
            return
        payload = base64.b64encode(array("f", vector).tobytes()).decode("ascii")
        try:
            await cache_write(self.cache, key, payload, self.ttl_seconds)
        except Exception as exc:  # noqa: BLE001 - a lost write costs one recomputation
            _log.warning("embedding cache write failed: %s", type(exc).__name__)
