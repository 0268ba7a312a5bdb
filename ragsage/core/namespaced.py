"""Embedders that keep something per namespace, and how a namespace's work is handed one.

Not a port: an adapter may or may not keep anything (a cache of vectors does),
and the work of a namespace asks for its own view either way.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ragsage.core.ports import Embedder
from ragsage.core.types import Scope


@runtime_checkable
class PerNamespaceEmbedder(Protocol):
    """An embedder that keeps something per namespace (a cache), and so must be told whose."""

    def for_namespace(self, namespace: str) -> Embedder: ...


def embedder_for(embedder: Embedder, scope: Scope) -> Embedder:
    """``embedder`` as ``scope``'s work should use it.

    What one namespace's texts leave behind (cached vectors) must neither be
    seen by another namespace, not even as a faster answer, nor outlive the
    namespace's erasure; an embedder that keeps such things is handed the
    namespace here.
    """
    if isinstance(embedder, PerNamespaceEmbedder):
        return embedder.for_namespace(scope.namespace)
    return embedder
