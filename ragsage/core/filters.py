"""The restrictions a retrieval applies before ranking, and how two sets of them combine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ragsage.core import json_match
from ragsage.core.chunks import Chunk
from ragsage.core.documents import Document


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions a retrieval applies before ranking; every set field must match.

    ``metadata`` matches when each key is present on the chunk with a value equal
    by JSON's rules (``true`` is not ``1``; ``1`` is ``1.0``), as the SQL of a search
    compares them (:mod:`ragsage.core.json_match`);
    ``created_after``/``created_before`` bound the document's creation time
    (inclusive), and a chunk with no time fails any time bound.
    """

    document_ids: frozenset[str] | None = None
    sources: frozenset[str] | None = None
    metadata: Mapping[str, Any] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None

    def matches(self, chunk: Chunk) -> bool:
        return self.admits(chunk.document_id, chunk.source, chunk.metadata, chunk.created_at)

    def matches_document(self, document: Document) -> bool:
        return self.admits(document.id, document.source, document.metadata, document.created_at)

    def admits(
        self,
        document_id: str,
        source: str,
        metadata: Mapping[str, Any],
        created_at: datetime | None,
    ) -> bool:
        """True if a passage of this document, source, metadata and time passes every filter."""
        if self.document_ids is not None and document_id not in self.document_ids:
            return False
        if self.sources is not None and source not in self.sources:
            return False
        if self.metadata and not json_match.contains(metadata, self.metadata):
            return False
        if self.created_after is not None or self.created_before is not None:
            if created_at is None:
                return False
            if self.created_after is not None and created_at < self.created_after:
                return False
            if self.created_before is not None and created_at > self.created_before:
                return False
        return True

    def narrowing(self, asked: SearchFilters | None) -> SearchFilters:
        """What passes both these filters and ``asked``: each field the stricter of the two.

        Two metadata filters that want different values for one key pass
        nothing, as do two sets of ids or sources with nothing in common.
        """
        if asked is None or asked.is_empty:
            return self
        metadata = dict(asked.metadata or {})
        nothing = False
        for key, value in (self.metadata or {}).items():
            nothing = nothing or (key in metadata and not json_match.equal(metadata[key], value))
            metadata[key] = value
        ids = _both(self.document_ids, asked.document_ids)
        return SearchFilters(
            document_ids=frozenset() if nothing else ids,
            sources=_both(self.sources, asked.sources),
            metadata=metadata or None,
            created_after=_latest(self.created_after, asked.created_after),
            created_before=_earliest(self.created_before, asked.created_before),
        )

    @property
    def is_empty(self) -> bool:
        return (
            self.document_ids is None
            and self.sources is None
            and not self.metadata
            and self.created_after is None
            and self.created_before is None
        )


def _both(one: frozenset[str] | None, other: frozenset[str] | None) -> frozenset[str] | None:
    if one is None or other is None:
        return other if one is None else one
    return one & other


def _latest(one: datetime | None, other: datetime | None) -> datetime | None:
    return other if one is None else one if other is None else max(one, other)


def _earliest(one: datetime | None, other: datetime | None) -> datetime | None:
    return other if one is None else one if other is None else min(one, other)
