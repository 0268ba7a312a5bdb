"""Stores that live in the process: for the library's default knowledge base, the
offline CLI and the in-memory evaluation backend.  Real adapters, not doubles: each
keeps its data per namespace and snapshots to JSON."""

from ragsage.adapters.memory.stores import (
    MemoryCache,
    MemoryDocumentStore,
    MemoryLexicalStore,
    MemoryVectorStore,
)

__all__ = ["MemoryCache", "MemoryDocumentStore", "MemoryLexicalStore", "MemoryVectorStore"]
