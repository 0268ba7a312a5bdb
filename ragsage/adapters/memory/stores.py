"""In-memory stores: dense, lexical (BM25), documents, and a TTL cache.

Each keeps its data per namespace, so a scope can never read another's rows,
and snapshots to a JSON-able dict so the CLI can persist a corpus.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ragsage.core.chunks import Chunk, EmbeddedChunk, ScoredChunk, split_chunk_id
from ragsage.core.documents import Document
from ragsage.core.filters import SearchFilters
from ragsage.core.scopes import Scope
from ragsage.core.serialization import (
    chunk_from_dict,
    chunk_to_dict,
    document_from_dict,
    document_to_dict,
)
from ragsage.core.text import identifier_words, terms


def _top(
    scored: Iterable[tuple[float, Chunk]],
    k: int,
    filters: SearchFilters | None,
    make: Callable[[Chunk, float], ScoredChunk],
) -> list[ScoredChunk]:
    wanted = (
        (score, chunk)
        for score, chunk in scored
        if filters is None or filters.is_empty or filters.matches(chunk)
    )
    best = heapq.nlargest(k, wanted, key=lambda item: (item[0], item[1].id))
    return [make(chunk, score) for score, chunk in best]


@dataclass(slots=True)
class _Stored:
    chunk: Chunk
    sparse: dict[int, float]


class MemoryVectorStore:
    """Cosine search over vectors kept sparse; upsert replaces a document's chunks."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[str, list[_Stored]]] = defaultdict(dict)

    async def upsert(self, scope: Scope, records: Sequence[EmbeddedChunk]) -> None:
        by_document: dict[str, list[_Stored]] = {}
        for record in records:
            norm = math.sqrt(sum(value * value for value in record.vector))
            sparse = {i: v / norm for i, v in enumerate(record.vector) if v} if norm else {}
            by_document.setdefault(record.chunk.document_id, []).append(
                _Stored(record.chunk, sparse)
            )
        # Whole-document replacement: a re-chunk into fewer pieces leaves no tail.
        self._rows[scope.namespace].update(by_document)

    async def search(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
    ) -> Sequence[ScoredChunk]:
        norm = math.sqrt(sum(value * value for value in query_vector))
        if not norm:
            return []
        query = {i: v / norm for i, v in enumerate(query_vector) if v}
        scored = (
            (sum(w * row.sparse.get(i, 0.0) for i, w in query.items()), row.chunk)
            for rows in self._rows.get(scope.namespace, {}).values()
            for row in rows
        )
        return _top(scored, k, filters, lambda c, s: ScoredChunk(chunk=c, score=s, vector_score=s))

    async def delete(self, scope: Scope, document_id: str) -> None:
        self._rows.get(scope.namespace, {}).pop(document_id, None)

    def snapshot(self) -> dict[str, Any]:
        return {
            namespace: [
                {"chunk": chunk_to_dict(row.chunk), "sparse": sorted(row.sparse.items())}
                for rows in documents.values()
                for row in rows
            ]
            for namespace, documents in self._rows.items()
        }

    def restore(self, data: dict[str, Any]) -> None:
        self._rows.clear()
        for namespace, rows in data.items():
            documents = self._rows[namespace]
            for row in rows:
                chunk = chunk_from_dict(row["chunk"])
                sparse = {int(i): float(v) for i, v in row["sparse"]}
                documents.setdefault(chunk.document_id, []).append(_Stored(chunk, sparse))


def lexical_terms(text: str) -> list[str]:
    """The terms a text is indexed and searched by: its words plus its identifiers' parts."""
    return terms(f"{text} {identifier_words(text)}")


def _indexed_text(chunk: Chunk) -> str:
    # The heading path too, as the Postgres column has it: a method's chunk is
    # found by its class and module, a section's by its title.
    return " ".join((*chunk.heading_path, chunk.text))


class _Bm25Index:
    """One namespace's inverted index."""

    def __init__(self) -> None:
        self.chunks: dict[str, Chunk] = {}
        self.lengths: dict[str, int] = {}
        self.postings: dict[str, dict[str, int]] = defaultdict(dict)
        self.by_document: dict[str, list[str]] = defaultdict(list)

    def add(self, chunk: Chunk) -> None:
        # A window of a long definition is found by its vector alone, as in Postgres.
        indexed = "" if "window" in chunk.metadata else _indexed_text(chunk)
        counts = Counter(lexical_terms(indexed))
        self.chunks[chunk.id] = chunk
        self.lengths[chunk.id] = sum(counts.values())
        self.by_document[chunk.document_id].append(chunk.id)
        for term, count in counts.items():
            self.postings[term][chunk.id] = count

    def remove_document(self, document_id: str) -> None:
        for chunk_id in self.by_document.pop(document_id, []):
            chunk = self.chunks.pop(chunk_id)
            self.lengths.pop(chunk_id)
            for term in set(lexical_terms(_indexed_text(chunk))):
                posting = self.postings.get(term)
                if posting is not None:
                    posting.pop(chunk_id, None)
                    if not posting:
                        del self.postings[term]


class MemoryLexicalStore:
    """BM25 keyword search (k1=1.2, b=0.75) over heading path and text; a miss scores nothing."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._indexes: dict[str, _Bm25Index] = defaultdict(_Bm25Index)

    async def index(self, scope: Scope, chunks: Sequence[Chunk]) -> None:
        index = self._indexes[scope.namespace]
        for document_id in {chunk.document_id for chunk in chunks}:
            index.remove_document(document_id)
        for chunk in chunks:
            index.add(chunk)

    async def search(
        self, scope: Scope, query: str, *, k: int, filters: SearchFilters | None = None
    ) -> Sequence[ScoredChunk]:
        index = self._indexes.get(scope.namespace)
        if index is None or not index.chunks:
            return []
        total = len(index.chunks)
        average = sum(index.lengths.values()) / total
        scores: dict[str, float] = defaultdict(float)
        for term in set(lexical_terms(query)):
            posting = index.postings.get(term, {})
            if not posting:
                continue
            idf = math.log(1 + (total - len(posting) + 0.5) / (len(posting) + 0.5))
            for chunk_id, count in posting.items():
                norm = self.k1 * (1 - self.b + self.b * index.lengths[chunk_id] / average)
                scores[chunk_id] += idf * count * (self.k1 + 1) / (count + norm)
        scored = ((score, index.chunks[chunk_id]) for chunk_id, score in scores.items())
        return _top(scored, k, filters, lambda c, s: ScoredChunk(chunk=c, score=s, keyword_score=s))

    async def delete(self, scope: Scope, document_id: str) -> None:
        index = self._indexes.get(scope.namespace)
        if index is not None:
            index.remove_document(document_id)

    def snapshot(self) -> dict[str, Any]:
        return {
            namespace: [chunk_to_dict(chunk) for chunk in index.chunks.values()]
            for namespace, index in self._indexes.items()
        }

    def restore(self, data: dict[str, Any]) -> None:
        self._indexes.clear()
        for namespace, chunks in data.items():
            index = self._indexes[namespace]
            for chunk in chunks:
                index.add(chunk_from_dict(chunk))


class MemoryDocumentStore:
    """Documents with their chunks in reading order: dedup, listing, neighbours."""

    def __init__(self) -> None:
        self._documents: dict[str, dict[str, tuple[Document, tuple[Chunk, ...]]]] = defaultdict(
            dict
        )

    async def save(self, scope: Scope, document: Document, chunks: Sequence[Chunk]) -> None:
        ordered = tuple(sorted(chunks, key=lambda chunk: chunk.ordinal))
        self._documents[scope.namespace][document.id] = (document, ordered)

    async def find_by_hash(self, scope: Scope, content_hash: str) -> Document | None:
        for document, _ in self._documents.get(scope.namespace, {}).values():
            if document.content_hash == content_hash:
                return document
        return None

    async def get(self, scope: Scope, document_id: str) -> Document | None:
        entry = self._documents.get(scope.namespace, {}).get(document_id)
        return entry[0] if entry else None

    async def list(self, scope: Scope) -> Sequence[Document]:
        documents = [entry[0] for entry in self._documents.get(scope.namespace, {}).values()]
        return sorted(documents, key=lambda document: (document.source, document.id))

    async def delete(self, scope: Scope, document_id: str) -> None:
        self._documents.get(scope.namespace, {}).pop(document_id, None)

    async def get_chunk(self, scope: Scope, chunk_id: str) -> Chunk | None:
        key = split_chunk_id(chunk_id)
        if key is None:
            return None
        document_id, ordinal = key
        entry = self._documents.get(scope.namespace, {}).get(document_id)
        if entry is None:
            return None
        matches = [chunk for chunk in entry[1] if chunk.ordinal == ordinal]
        return matches[0] if matches else None

    async def chunks(
        self, scope: Scope, document_id: str, *, first: int = 0, last: int | None = None
    ) -> Sequence[Chunk]:
        entry = self._documents.get(scope.namespace, {}).get(document_id)
        if entry is None:
            return []
        return [
            chunk
            for chunk in entry[1]
            if chunk.ordinal >= first and (last is None or chunk.ordinal <= last)
        ]

    async def count_chunks(self, scope: Scope) -> int:
        return sum(len(entry[1]) for entry in self._documents.get(scope.namespace, {}).values())

    def snapshot(self) -> dict[str, Any]:
        return {
            namespace: [
                {
                    "document": document_to_dict(document),
                    "chunks": [chunk_to_dict(chunk) for chunk in chunks],
                }
                for document, chunks in documents.values()
            ]
            for namespace, documents in self._documents.items()
        }

    def restore(self, data: dict[str, Any]) -> None:
        self._documents.clear()
        for namespace, entries in data.items():
            for entry in entries:
                document = document_from_dict(entry["document"])
                chunks = tuple(chunk_from_dict(chunk) for chunk in entry["chunks"])
                self._documents[namespace][document.id] = (document, chunks)


class MemoryCache:
    """A dict with per-entry expiry, counting hits and misses."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[str, tuple[str, float | None]] = {}
        self.hits = 0
        self.misses = 0

    async def get(self, key: str) -> str | None:
        entry = self._entries.get(key)
        if entry is not None and (entry[1] is None or entry[1] > self._clock()):
            self.hits += 1
            return entry[0]
        self._entries.pop(key, None)
        self.misses += 1
        return None

    async def set(self, key: str, value: str, *, ttl_seconds: int | None = None) -> None:
        expires = None if ttl_seconds is None else self._clock() + ttl_seconds
        self._entries[key] = (value, expires)

    def keys(self) -> list[str]:
        return list(self._entries)
