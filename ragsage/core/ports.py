"""The ports: every seam where an adapter plugs into the engine.

Each is a ``typing.Protocol``, so an adapter conforms by shape and never imports
ragsage to subclass anything.  The pipelines in :mod:`ragsage.ingestion` and
:mod:`ragsage.query` depend on these and nothing else; :mod:`ragsage.testing` holds
a working in-memory implementation of each.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Literal, Protocol, Self, runtime_checkable

from ragsage.core.chunks import Chunk, EmbeddedChunk, Ranked, ScoredChunk
from ragsage.core.conversations import Turn
from ragsage.core.documents import Document, RawSource
from ragsage.core.filters import SearchFilters
from ragsage.core.geometry import PagePositions
from ragsage.core.pages import Page, PageImage, PageRoute, ParsedDocument
from ragsage.core.scopes import Scope

InputType = Literal["document", "query"]


@runtime_checkable
class DocumentParser(Protocol):
    """Reads a source's bytes into per-page Markdown.

    Raises a :class:`~ragsage.core.errors.DocumentError` subclass naming the file when the
    bytes cannot be read; never returns a half-read document silently.
    """

    def parse(self, source: RawSource) -> ParsedDocument: ...


@runtime_checkable
class PageClassifier(Protocol):
    """Decides whether a page is read from its text layer or by a vision model."""

    def classify(self, page: Page) -> PageRoute: ...


@runtime_checkable
class Chunker(Protocol):
    """Splits a document's resolved pages into retrievable chunks.

    ``size`` and ``overlap`` are token budgets.  Chunk ordinals must be dense from 0
    across all pages so ``<document>:<ordinal>`` ids are unique.
    """

    def chunk(
        self, document: Document, pages: Sequence[Page], *, size: int, overlap: int
    ) -> Sequence[Chunk]: ...


@runtime_checkable
class Contextualizer(Protocol):
    """Returns the text to embed for a chunk: situating context, then the chunk."""

    async def contextualize(self, document: Document, chunk: Chunk, *, full_text: str) -> str: ...


@runtime_checkable
class PageContextualizer(Protocol):
    """A Contextualizer that situates all of a document's chunks at once, from its pages.

    The pipeline prefers this form when an adapter offers it: an adapter that
    indexes the pages once avoids searching the whole text for every chunk.
    """

    async def contextualize_pages(
        self, document: Document, chunks: Sequence[Chunk], pages: Sequence[Page]
    ) -> list[str]: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed width.

    ``model`` names the model (pinned per corpus), ``dimension`` its width, and
    ``similarity_floor`` the cosine below which this model's matches are noise —
    models differ widely there, which is why the query engine's relevance floor
    is read from the embedder rather than fixed.
    """

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def similarity_floor(self) -> float: ...

    async def embed(
        self, texts: Sequence[str], *, input_type: InputType = "document"
    ) -> Sequence[tuple[float, ...]]: ...


@runtime_checkable
class Reranker(Protocol):
    """Rescores candidates against the query; may drop ones it judges irrelevant."""

    async def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], *, top_k: int
    ) -> Sequence[ScoredChunk]: ...


@runtime_checkable
class LLMClient(Protocol):
    """Generation (streamed) and vision transcription of page images."""

    def generate(self, prompt: str) -> AsyncIterator[str]: ...

    async def transcribe(self, image: PageImage) -> str: ...


@runtime_checkable
class QueryRewriter(Protocol):
    """Turns a follow-up question into a standalone one, using the conversation."""

    async def rewrite(self, question: str, history: Sequence[Turn]) -> str: ...


@runtime_checkable
class VectorStore(Protocol):
    """Dense vectors by chunk; ``upsert`` replaces every chunk of each document given."""

    async def upsert(self, scope: Scope, records: Sequence[EmbeddedChunk]) -> None: ...

    async def search(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
    ) -> Sequence[ScoredChunk]: ...

    async def delete(self, scope: Scope, document_id: str) -> None: ...


@runtime_checkable
class LexicalStore(Protocol):
    """Keyword search by chunk; ``index`` replaces every chunk of each document given."""

    async def index(self, scope: Scope, chunks: Sequence[Chunk]) -> None: ...

    async def search(
        self, scope: Scope, query: str, *, k: int, filters: SearchFilters | None = None
    ) -> Sequence[ScoredChunk]: ...

    async def delete(self, scope: Scope, document_id: str) -> None: ...


@runtime_checkable
class RanksVectors(Protocol):
    """Optional for a vector store: the ranking of :meth:`VectorStore.search` by id alone.

    With it (and :class:`FetchesChunks`), a search reads rows only for the
    results it returns, not for every candidate fusion looks at.  The first
    ``rows`` results carry their chunk: those are the likely winners, and
    reading them here spares a round trip for them later.
    """

    async def rank_vectors(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
        rows: int = 0,
    ) -> Sequence[Ranked]: ...


@runtime_checkable
class RanksText(Protocol):
    """Optional for a lexical store: :class:`RanksVectors`' counterpart for words."""

    async def rank_text(
        self,
        scope: Scope,
        query: str,
        *,
        k: int,
        filters: SearchFilters | None = None,
        rows: int = 0,
    ) -> Sequence[Ranked]: ...


@runtime_checkable
class FetchesChunks(Protocol):
    """Optional for a vector store: the chunks of the generation it searches, by id.

    Ids it no longer holds are left out, so a caller may ask for ids a moment old.
    """

    async def fetch_chunks(self, scope: Scope, chunk_ids: Sequence[str]) -> Sequence[Chunk]: ...


@runtime_checkable
class DocumentStore(Protocol):
    """The registry of ingested documents and their chunks, in reading order."""

    async def save(self, scope: Scope, document: Document, chunks: Sequence[Chunk]) -> None: ...

    async def find_by_hash(self, scope: Scope, content_hash: str) -> Document | None: ...

    async def get(self, scope: Scope, document_id: str) -> Document | None: ...

    async def list(self, scope: Scope) -> Sequence[Document]: ...

    async def delete(self, scope: Scope, document_id: str) -> None: ...

    async def get_chunk(self, scope: Scope, chunk_id: str) -> Chunk | None: ...

    async def chunks(
        self, scope: Scope, document_id: str, *, first: int = 0, last: int | None = None
    ) -> Sequence[Chunk]:
        """The document's chunks with ``first <= ordinal <= last``, in ordinal order."""
        ...

    async def count_chunks(self, scope: Scope) -> int: ...


@runtime_checkable
class PagePositionsReader(Protocol):
    """A document store that kept where its pages' lines are (optional to implement).

    Citations read it to draw the cited sentence on its page; a store without
    it (the in-memory one) gives citations no boxes.
    """

    async def page_positions(
        self, scope: Scope, pages: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], PagePositions]:
        """The positions kept for each (document id, page number) asked, where there are some."""
        ...


@runtime_checkable
class Cache(Protocol):
    """A string-to-string cache; the engine stays correct if it is empty or wrong.

    ``get`` and ``set(key, value)`` are all a cache must offer.  A cache whose
    ``set`` also takes a ``ttl_seconds`` keyword (the Redis cache does) is told
    how long each entry is worth keeping: the engine writes through
    :func:`ragsage.core.cache_writes.cache_write`, which passes it only to those.
    """

    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, value: str) -> None: ...


@runtime_checkable
class Span(Protocol):
    """One timed stage of a trace; a context manager that records failures."""

    def set(self, **attributes: object) -> None: ...

    def child(self, name: str, **attributes: object) -> Span: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class Tracer(Protocol):
    """Opens root spans, each tagged with the tenant it runs for."""

    def span(self, name: str, *, tenant: str | None, **attributes: object) -> Span: ...

    def event(self, name: str, **fields: object) -> None: ...
