"""Embedding generations: which model and width a namespace's vectors come from.

A namespace has one active generation serving queries and, during a re-index,
one building generation; the Postgres adapter stores them
(:mod:`ragsage.adapters.postgres.generations`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragsage.core.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class Generation:
    """One embedding generation of a namespace."""

    id: int
    embedding_model: str
    embedding_dim: int
    state: str
    embedder: str = "hashing"


class EmbeddingModelMismatch(ConfigurationError):
    """The configured embedder is not the model a namespace's vectors were made with."""

    def __init__(self, namespace: str, pinned: Generation, configured: str, dim: int) -> None:
        self.pinned, self.configured = pinned, configured
        super().__init__(
            f"namespace {namespace!r} is indexed with embedding model "
            f"{pinned.embedding_model!r} ({pinned.embedding_dim} dimensions), but the configured "
            f"model is {configured!r} ({dim} dimensions); switch back, or run "
            f"`ragsage reindex --namespace {namespace} --embedding-model {configured}`"
        )
