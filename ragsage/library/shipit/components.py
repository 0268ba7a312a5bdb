"""The shipit API's parts: its protocols and the stock, dependency-free implementations.

The protocols are what code written against the reference page implements
(synchronous, on the page's :class:`~ragsage.library.shipit.types.Chunk`); the stock
parts are small, but the chunker is ragsage's structure-aware one.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ragsage.adapters.offline import hashed_vector
from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import Document as EngineDocument
from ragsage.core.documents import RawSource
from ragsage.core.identity import content_hash
from ragsage.core.text import terms
from ragsage.library.shipit.types import Chunk, Document, IndexFilters, from_engine_chunk

# ---------------------------------------------------------------- protocols


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of ``dimension`` floats; ``kind`` is "passage" or "query"."""

    dimension: int

    def embed(self, texts: list[str], *, kind: str = "passage") -> list[list[float]]: ...


@runtime_checkable
class VectorStore(Protocol):
    """Holds chunks with their embeddings and ranks them by cosine similarity."""

    def add(self, chunks: list[Chunk]) -> None: ...

    def delete(self, chunk_ids: list[str]) -> None: ...

    def delete_document(self, document_id: str) -> None: ...

    def get(self, chunk_id: str) -> Chunk | None: ...

    def get_many(self, chunk_ids: list[str]) -> list[Chunk]: ...

    def list_chunks(self, document_id: str) -> list[Chunk]: ...

    def search(
        self, query_embedding: list[float], top_k: int, filters: IndexFilters | None = None
    ) -> list[tuple[Chunk, float]]: ...

    def count(self) -> int: ...

    def list_sources(self) -> list[str]: ...


@runtime_checkable
class KeywordStore(Protocol):
    """Ranks chunks by the query's words."""

    def add(self, chunks: list[Chunk]) -> None: ...

    def delete(self, chunk_ids: list[str]) -> None: ...

    def delete_document(self, document_id: str) -> None: ...

    def search(
        self, query: str, top_k: int, filters: IndexFilters | None = None
    ) -> list[tuple[Chunk, float]]: ...

    def count(self) -> int: ...


@runtime_checkable
class Reranker(Protocol):
    """Scores candidates against the query; returns the best ``top_k``, best first."""

    def rerank(self, query: str, chunks: list[Chunk], top_k: int) -> list[tuple[Chunk, float]]: ...


# ---------------------------------------------------------------- embedders


@dataclass
class HashingEmbedder:
    """ragsage's offline hashing embedder with the page's knobs: deterministic, L2-normalised.

    Each distinct word of a text lands in one of ``dimension`` buckets, with a
    sign, weighted by the log of its count; ``seed`` keys the hash, so two
    seeds give unrelated spaces (ragsage's service hashes with no seed).
    Texts that share words point the same way; it knows nothing of meaning.
    """

    dimension: int = 384
    seed: str = "shipit-rag"

    def __post_init__(self) -> None:
        if self.dimension < 1:
            raise ValueError(f"dimension must be positive, got {self.dimension}")

    def embed(self, texts: list[str], *, kind: str = "passage") -> list[list[float]]:
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimension
            for index, weight in hashed_vector(text, self.dimension, self.seed).items():
                vector[index] = weight
            vectors.append(vector)
        return vectors


@dataclass
class CallableEmbedder:
    """Any ``fn(list[str]) -> list[list[float]]`` as an embedder, checked on every call."""

    fn: Callable[[list[str]], Sequence[Sequence[float]]]
    dimension: int

    def embed(self, texts: list[str], *, kind: str = "passage") -> list[list[float]]:
        vectors = [list(map(float, vector)) for vector in self.fn(list(texts))]
        if len(vectors) != len(texts):
            raise ValueError(
                f"the embedding function gave {len(vectors)} vectors for {len(texts)} texts"
            )
        for vector in vectors:
            if len(vector) != self.dimension:
                raise ValueError(
                    f"the embedding function gave a vector of {len(vector)} floats; "
                    f"{self.dimension} were declared"
                )
        return vectors


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        raise ValueError(f"cannot compare vectors of {len(a)} and {len(b)} floats")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


# ---------------------------------------------------------------- stores


@dataclass
class InMemoryVectorStore:
    """A dict of chunks searched by exact cosine similarity: fine for thousands of chunks."""

    _chunks: dict[str, Chunk] = field(default_factory=dict)

    def add(self, chunks: list[Chunk]) -> None:
        for chunk in chunks:
            self._chunks[chunk.id] = chunk

    def delete(self, chunk_ids: list[str]) -> None:
        for value in chunk_ids:
            self._chunks.pop(value, None)

    def delete_document(self, document_id: str) -> None:
        self.delete([c.id for c in self._chunks.values() if c.document_id == document_id])

    def get(self, chunk_id: str) -> Chunk | None:
        return self._chunks.get(chunk_id)

    def get_many(self, chunk_ids: list[str]) -> list[Chunk]:
        return [self._chunks[value] for value in chunk_ids if value in self._chunks]

    def list_chunks(self, document_id: str) -> list[Chunk]:
        """The document's chunks in reading order."""
        found = [c for c in self._chunks.values() if c.document_id == document_id]
        return sorted(found, key=lambda c: c.chunk_index)

    def search(
        self, query_embedding: list[float], top_k: int, filters: IndexFilters | None = None
    ) -> list[tuple[Chunk, float]]:
        scored = [
            (chunk, cosine(query_embedding, chunk.embedding))
            for chunk in self._chunks.values()
            if chunk.embedding is not None and (filters is None or filters.matches(chunk))
        ]
        scored.sort(key=lambda pair: (-pair[1], pair[0].id))
        return scored[: max(0, top_k)]

    def count(self) -> int:
        return len(self._chunks)

    def list_sources(self) -> list[str]:
        return sorted({c.source for c in self._chunks.values() if c.source})

    def all_chunks(self) -> list[Chunk]:
        """Every chunk held, in the order added."""
        return list(self._chunks.values())


@dataclass
class InMemoryBM25Store:
    """Okapi BM25 over each chunk's ``text_for_embedding``, in memory.

    Words are ragsage's search terms (lower case, stop words out, identifiers
    split into their parts).  Statistics are kept as chunks come and go, so a
    search costs one pass over the chunks that hold a query word.
    """

    k1: float = 1.5
    b: float = 0.75
    _chunks: dict[str, Chunk] = field(default_factory=dict)
    _counts: dict[str, Counter[str]] = field(default_factory=dict)
    _postings: dict[str, set[str]] = field(default_factory=dict)
    _total_length: int = 0

    def add(self, chunks: list[Chunk]) -> None:
        self.delete([c.id for c in chunks if c.id in self._chunks])
        for chunk in chunks:
            counts = Counter(terms(chunk.text_for_embedding or chunk.text))
            self._chunks[chunk.id], self._counts[chunk.id] = chunk, counts
            self._total_length += sum(counts.values())
            for word in counts:
                self._postings.setdefault(word, set()).add(chunk.id)

    def delete(self, chunk_ids: list[str]) -> None:
        for value in chunk_ids:
            counts = self._counts.pop(value, None)
            if counts is None:
                continue
            del self._chunks[value]
            self._total_length -= sum(counts.values())
            for word in counts:
                holders = self._postings[word]
                holders.discard(value)
                if not holders:
                    del self._postings[word]

    def delete_document(self, document_id: str) -> None:
        self.delete([c.id for c in self._chunks.values() if c.document_id == document_id])

    def search(
        self, query: str, top_k: int, filters: IndexFilters | None = None
    ) -> list[tuple[Chunk, float]]:
        total = len(self._chunks)
        if not total:
            return []
        average = self._total_length / total or 1.0
        scores: dict[str, float] = {}
        for word in set(terms(query)):
            holders = self._postings.get(word, set())
            if not holders:
                continue
            rarity = math.log(1.0 + (total - len(holders) + 0.5) / (len(holders) + 0.5))
            for value in holders:
                counts = self._counts[value]
                often = counts[word]
                scale = self.k1 * (1.0 - self.b + self.b * sum(counts.values()) / average)
                scores[value] = scores.get(value, 0.0) + rarity * often * (self.k1 + 1) / (
                    often + scale
                )
        ranked = [
            (self._chunks[value], score)
            for value, score in scores.items()
            if filters is None or filters.matches(self._chunks[value])
        ]
        ranked.sort(key=lambda pair: (-pair[1], pair[0].id))
        return ranked[: max(0, top_k)]

    def count(self) -> int:
        return len(self._chunks)


# ---------------------------------------------------------------- chunking


@dataclass
class DocumentChunker:
    """ragsage's structure-aware chunker with the page's knobs.

    The content is read as Markdown: chunks follow its headings, keep tables
    and code whole where they fit, and stay within ``target_tokens``, with
    ``overlap_tokens`` carried over when a section is split.  Each chunk's
    ``text_for_embedding`` starts with up to ``title_prefix_chars`` of the
    document's title and the chunk's heading path, so a passage is embedded
    with what it is about.
    """

    target_tokens: int = 512
    overlap_tokens: int = 64
    title_prefix_chars: int = 64

    def __post_init__(self) -> None:
        if self.target_tokens < 16:
            raise ValueError(f"target_tokens must be at least 16, got {self.target_tokens}")
        if not 0 <= self.overlap_tokens < self.target_tokens:
            raise ValueError("overlap_tokens must be at least 0 and below target_tokens")
        self._backend = HeuristicBackend()

    def chunk(self, document: Document) -> list[Chunk]:
        content = document.content.encode("utf-8")
        name = document.source or document.title or document.id
        parsed = self._backend.parse(RawSource(content, f"{name}.md", "text/markdown"))
        title = document.title or parsed.title or ""
        engine = EngineDocument(
            id=document.id,
            content_hash=content_hash(content),
            title=title,
            source=document.source or "",
            metadata=dict(document.metadata),
            created_at=document.created_at,
        )
        pieces = self._backend.chunk(
            engine, parsed.pages, size=self.target_tokens, overlap=self.overlap_tokens
        )
        prefix = title[: self.title_prefix_chars].strip()
        chunks = []
        for piece in pieces:
            chunk = from_engine_chunk(piece)
            chunk.metadata = deepcopy({**document.metadata, **chunk.metadata})
            if title:
                chunk.metadata["title"] = title
            else:
                chunk.metadata.pop("title", None)
            heading = " > ".join(h for h in piece.heading_path if h != title)
            lead = " — ".join(part for part in (prefix, heading) if part)
            chunk.text_for_embedding = f"{lead}\n\n{piece.text}" if lead else piece.text
            chunks.append(chunk)
        return chunks

    def chunk_many(self, documents: Iterable[Document]) -> list[Chunk]:
        return [chunk for document in documents for chunk in self.chunk(document)]


def as_embedder(value: Any) -> Embedder:
    """An embedder from one, or from a plain ``fn(list[str]) -> vectors`` (width probed once)."""
    if isinstance(value, Embedder):
        return value
    if callable(value):
        probe = list(value(["probe"]))
        if len(probe) != 1 or not len(probe[0]):
            raise TypeError("the embedding function must return one non-empty vector per text")
        return CallableEmbedder(fn=value, dimension=len(probe[0]))
    raise TypeError(
        f"embedder must have dimension and embed(texts, kind=...), or be a function; "
        f"got {type(value).__name__}"
    )
