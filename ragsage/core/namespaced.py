"""Embedders that keep something per namespace, and how a namespace's work is handed one.

Not a port: an adapter may or may not keep anything (a cache of vectors does),
and the work of a namespace asks for its own view either way.
"""

from __future__ import annotations

import hashlib
from typing import Protocol, runtime_checkable

from ragsage.core.ports import Embedder
from ragsage.core.scopes import Scope

# The reader of work bound to no principal: workers, the CLI, unbound keys.
READS_ALL = "all"


@runtime_checkable
class PerNamespaceEmbedder(Protocol):
    """An embedder that keeps something per namespace (a cache), and so must be told whose."""

    def for_namespace(self, namespace: str, reader: str = READS_ALL) -> Embedder: ...


def embedder_for(embedder: Embedder, scope: Scope) -> Embedder:
    """``embedder`` as ``scope``'s work should use it.

    What one namespace's texts leave behind (cached vectors) must neither be
    seen by another namespace, not even as a faster answer, nor outlive the
    namespace's erasure; an embedder that keeps such things is handed the
    namespace here.  Within a namespace it is handed the reader too (the
    scope's principal set), so a reader bound to one group cannot tell from a
    search's speed which questions a reader of another group asked.
    """
    if isinstance(embedder, PerNamespaceEmbedder):
        return embedder.for_namespace(scope.namespace, reader_of(scope))
    return embedder


def reader_of(scope: Scope) -> str:
    """A short name for whom ``scope`` reads as: its principal set, or everyone."""
    if scope.principals is None:
        return READS_ALL
    joined = "\n".join(sorted(scope.principals)).encode("utf-8")
    return "p-" + hashlib.sha256(joined).hexdigest()[:24]
