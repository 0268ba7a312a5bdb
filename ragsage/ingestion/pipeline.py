"""The ingestion pipeline: one document from bytes to searchable chunks.

parse (through the parse cache) → classify each page → transcribe vision pages →
chunk → contextualize → embed in batches → replace the document's rows in the
vector, lexical and document stores.  Every stage is a port, so the same code runs
on the in-memory fakes, in a Celery worker against Postgres, or in a notebook.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import PurePath

from ragsage.core.cache_writes import cache_write
from ragsage.core.chunks import Chunk, EmbeddedChunk
from ragsage.core.documents import Document, RawSource
from ragsage.core.errors import DocumentError, EmptyDocument, ParseError
from ragsage.core.geometry import PagePositions
from ragsage.core.identity import content_hash, document_id_for
from ragsage.core.namespaced import embedder_for
from ragsage.core.offload import run_cpu
from ragsage.core.pages import Page, PageRoute, ParsedDocument
from ragsage.core.ports import (
    Cache,
    Chunker,
    Contextualizer,
    DocumentParser,
    DocumentStore,
    Embedder,
    LexicalStore,
    LLMClient,
    PageClassifier,
    PageContextualizer,
    Span,
    Tracer,
    VectorStore,
)
from ragsage.core.scopes import Scope
from ragsage.core.tracing import NullTracer, elapsed_ms, timed_stage
from ragsage.core.transcribing import TranscriptionUnavailable, transcribe_placed
from ragsage.ingestion.batching import bounded, embed_texts
from ragsage.ingestion.config import IngestionConfig
from ragsage.ingestion.parse_cache import decode_parsed, encode_parsed, parse_cache_key
from ragsage.ingestion.results import IngestResult, PreparedDocument

_log = logging.getLogger(__name__)
StageListener = Callable[[str], None]
# Told (items done, items in all) as a stage advances: chunks embedded, for now.
ProgressListener = Callable[[int, int], None]


def _ignore_stage(name: str) -> None:
    return None


def _require_content(source: RawSource) -> None:
    if not source.content:
        raise EmptyDocument(source.filename, "the file is empty (0 bytes)")


class IngestionPipeline:
    """Turns one :class:`RawSource` into a stored, searchable document."""

    def __init__(
        self,
        *,
        parser: DocumentParser,
        classifier: PageClassifier,
        chunker: Chunker,
        contextualizer: Contextualizer,
        embedder: Embedder,
        llm: LLMClient,
        vector_store: VectorStore,
        lexical_store: LexicalStore,
        document_store: DocumentStore,
        cache: Cache | None = None,
        tracer: Tracer | None = None,
        config: IngestionConfig | None = None,
    ) -> None:
        self.parser, self.classifier, self.chunker = parser, classifier, chunker
        self.contextualizer, self.embedder, self.llm = contextualizer, embedder, llm
        self.vector_store, self.lexical_store = vector_store, lexical_store
        self.document_store, self.cache = document_store, cache
        self.tracer: Tracer = tracer or NullTracer()
        self.config = config or IngestionConfig()

    async def ingest(
        self,
        scope: Scope,
        source: RawSource,
        *,
        document_id: str | None = None,
        created_at: datetime | None = None,
    ) -> IngestResult:
        """Ingest ``source``, replacing any earlier version of the same document.

        Bytes already ingested in this namespace are not processed again; the
        existing document is returned with ``duplicate=True``.  Raises a
        :class:`DocumentError` naming the file when it cannot be read.
        """
        with self.tracer.span("ingest", tenant=scope.namespace, filename=source.filename) as root:
            _require_content(source)
            existing = await self.document_store.find_by_hash(scope, content_hash(source.content))
            if existing is not None:
                root.set(duplicate_of=existing.id)
                chunks = await self.document_store.chunks(scope, existing.id)
                return IngestResult(existing, len(chunks), 0, 0, duplicate=True)
            prepared = await self._prepare(root, scope, source, document_id, created_at)
            await self._store(
                root, scope, prepared, self.vector_store, self.lexical_store, self.document_store
            )
            root.set(document_id=prepared.document.id, chunks=len(prepared.chunks))
        return prepared.result()

    async def prepare(
        self,
        scope: Scope,
        source: RawSource,
        *,
        document_id: str | None = None,
        created_at: datetime | None = None,
        on_stage: StageListener | None = None,
        on_progress: ProgressListener | None = None,
    ) -> PreparedDocument:
        """Everything up to the write: parse, resolve pages, chunk, contextualize, embed.

        Touches no store, so a caller holding a database transaction only for
        the write (see :meth:`store`) keeps it short.  ``on_stage`` is told the
        name of each stage as it starts, and ``on_progress`` how many chunks
        are embedded of how many (a job runner reports both as progress).
        """
        with self.tracer.span("prepare", tenant=scope.namespace, filename=source.filename) as root:
            _require_content(source)
            return await self._prepare(
                root, scope, source, document_id, created_at, on_stage, on_progress
            )

    async def prepare_from_pages(
        self,
        scope: Scope,
        document: Document,
        pages: Sequence[Page],
        *,
        on_stage: StageListener | None = None,
        on_progress: ProgressListener | None = None,
    ) -> PreparedDocument:
        """Chunk, contextualize and embed pages resolved earlier (a re-index).

        No parsing and no vision: the text of every page, transcriptions
        included, comes from the pages kept at ingestion.
        """
        stage = on_stage or _ignore_stage
        timings: dict[str, float] = {}
        with self.tracer.span("prepare", tenant=scope.namespace, filename=document.source) as root:
            records = await self._chunk_and_embed(
                root,
                scope,
                document,
                pages,
                stage,
                timings,
                empty="its stored pages hold no text",
                progress=on_progress,
            )
        return PreparedDocument(
            document=document,
            pages=tuple(pages),
            records=tuple(records),
            vision_pages=0,
            parse_cache_hit=False,
            timing_ms=timings,
        )

    async def embed_kept(
        self,
        scope: Scope,
        texts: Sequence[str],
        *,
        on_stage: StageListener | None = None,
        on_progress: ProgressListener | None = None,
    ) -> tuple[list[tuple[float, ...]], dict[str, float]]:
        """Embed chunk texts kept from another generation (a re-index, same chunking).

        Returns the vectors in order and the stage's timings; nothing is chunked,
        contextualized or parsed.
        """
        stage = on_stage or _ignore_stage
        timings: dict[str, float] = {}
        with self.tracer.span("prepare", tenant=scope.namespace, kept_chunks=len(texts)) as root:
            stage("embed")
            vectors = await self._embed(root, scope, timings, texts, on_progress)
        return vectors, timings

    async def store(
        self,
        scope: Scope,
        prepared: PreparedDocument,
        *,
        vector_store: VectorStore | None = None,
        lexical_store: LexicalStore | None = None,
        document_store: DocumentStore | None = None,
    ) -> IngestResult:
        """Replace the document's rows with ``prepared``; stores default to the pipeline's.

        Passing stores bound to one database transaction makes the replacement
        atomic with whatever else that transaction does (marking a job done).
        """
        with self.tracer.span("store", tenant=scope.namespace) as root:
            await self._store(
                root,
                scope,
                prepared,
                vector_store or self.vector_store,
                lexical_store or self.lexical_store,
                document_store or self.document_store,
            )
        return prepared.result()

    async def _prepare(
        self,
        root: Span,
        scope: Scope,
        source: RawSource,
        document_id: str | None,
        created_at: datetime | None,
        on_stage: StageListener | None = None,
        on_progress: ProgressListener | None = None,
    ) -> PreparedDocument:
        stage = on_stage or _ignore_stage
        timings: dict[str, float] = {}
        digest = content_hash(source.content)
        stage("parse")
        with timed_stage(root, timings, "parse_ms", "parse", cpu_key="parse_cpu_ms") as span:
            parsed, cache_hit = await self._parse(scope, source, digest)
            span.set(pages=len(parsed.pages), cache_hit=cache_hit)

        document = Document(
            id=document_id or document_id_for(scope.namespace, source.filename),
            content_hash=digest,
            title=parsed.title or PurePath(source.filename).stem or source.filename,
            source=source.filename,
            metadata={**parsed.metadata, **source.metadata},
            created_at=created_at or datetime.now(UTC),
        )
        stage("vision")
        started = time.perf_counter()
        warnings: list[str] = []
        pages, vision_pages = await self._resolve_pages(root, parsed, warnings)
        timings["pages_ms"] = elapsed_ms(started)
        if not any(page.text.strip() for page in pages):
            reason = f" ({warnings[0]})" if warnings else ""
            raise EmptyDocument(
                source.filename, f"no text could be extracted from any page{reason}"
            )

        records = await self._chunk_and_embed(
            root,
            scope,
            document,
            pages,
            stage,
            timings,
            empty="parsing produced no text to index",
            progress=on_progress,
        )
        return PreparedDocument(
            document=document,
            pages=tuple(pages),
            records=tuple(records),
            vision_pages=vision_pages,
            parse_cache_hit=cache_hit,
            timing_ms=timings,
            warnings=tuple(warnings),
        )

    async def _chunk_and_embed(
        self,
        root: Span,
        scope: Scope,
        document: Document,
        pages: Sequence[Page],
        stage: StageListener,
        timings: dict[str, float],
        *,
        empty: str,
        progress: ProgressListener | None = None,
    ) -> list[EmbeddedChunk]:
        """Chunk resolved pages, contextualize the chunks and embed them, timing each step."""
        stage("chunk")
        with timed_stage(root, timings, "chunk_ms", "chunk", cpu_key="chunk_cpu_ms") as span:
            chunks = await run_cpu(
                _chunk_all,
                self.chunker,
                document,
                pages,
                self.config.chunk_size,
                self.config.chunk_overlap,
            )
            span.set(chunks=len(chunks))
        if not chunks:
            raise EmptyDocument(document.source, empty)
        if self.config.contextualize:
            stage("contextualize")
            with timed_stage(
                root,
                timings,
                "contextualize_ms",
                "contextualize",
                cpu_key="contextualize_cpu_ms",
                chunks=len(chunks),
            ):
                chunks = await self._contextualize(document, chunks, pages)
        stage("embed")
        texts = [chunk.embed_text for chunk in chunks]
        vectors = await self._embed(root, scope, timings, texts, progress)
        return [
            EmbeddedChunk(chunk=chunk, vector=vector)
            for chunk, vector in zip(chunks, vectors, strict=True)
        ]

    @staticmethod
    async def _store(
        root: Span,
        scope: Scope,
        prepared: PreparedDocument,
        vector_store: VectorStore,
        lexical_store: LexicalStore,
        document_store: DocumentStore,
    ) -> None:
        with timed_stage(
            root,
            prepared.timing_ms,
            "store_ms",
            "store",
            cpu_key="store_cpu_ms",
            chunks=len(prepared.chunks),
        ):
            await vector_store.upsert(scope, prepared.records)
            await lexical_store.index(scope, prepared.chunks)
            await document_store.save(scope, prepared.document, prepared.chunks)

    async def _parse(
        self, scope: Scope, source: RawSource, digest: str
    ) -> tuple[ParsedDocument, bool]:
        key = parse_cache_key(scope.namespace, digest, self.parser)
        if self.cache is not None:
            try:
                payload = await self.cache.get(key)
            except Exception as exc:  # noqa: BLE001 - the cache may fail; parsing may not
                _log.warning("parse cache read failed, parsing instead: %s", exc)
                payload = None
            cached = decode_parsed(payload) if payload is not None else None
            if cached is not None:
                return cached, True
        try:
            parsed = await run_cpu(self.parser.parse, source)
        except DocumentError:
            raise
        except Exception as exc:
            raise ParseError(source.filename, f"could not be parsed ({exc})") from exc
        if not parsed.pages:
            raise EmptyDocument(source.filename, "the file has no pages")
        if self.cache is not None:
            try:
                await cache_write(
                    self.cache, key, encode_parsed(parsed), self.config.parse_cache_ttl_seconds
                )
            except Exception as exc:  # noqa: BLE001 - a failed write costs a future re-parse
                _log.warning("parse cache write failed: %s", exc)
        return parsed, False

    async def _resolve_pages(
        self, root: Span, parsed: ParsedDocument, warnings: list[str]
    ) -> tuple[list[Page], int]:
        """Route every page, and replace vision pages' text with a transcription."""
        with root.child("classify") as span:
            routes = await run_cpu(_classify_all, self.classifier, parsed.pages)
            vision = [
                page
                for page, route in zip(parsed.pages, routes, strict=True)
                if route is PageRoute.VISION and page.image is not None
            ]
            span.set(vision_pages=len(vision))
        transcripts: dict[int, tuple[str, PagePositions | None]] = {}
        if vision:
            with root.child("vision", pages=len(vision)):

                async def read(page: Page) -> tuple[str, PagePositions | None]:
                    assert page.image is not None
                    try:
                        return await transcribe_placed(self.llm, page.image)
                    except TranscriptionUnavailable as exc:
                        # Reported on the document, never dropped silently.
                        warnings.append(f"page {page.number} is a scan and was skipped: {exc}")
                        return "", None

                texts = await bounded(self.config.concurrency, vision, read)
                transcripts = {page.number: text for page, text in zip(vision, texts, strict=True)}
        resolved = []
        for page in parsed.pages:
            if page.number in transcripts:
                # A transcript is new text: the text layer's positions no longer fit
                # it, and only OCR says where its own lines are.
                transcript, placed = transcripts[page.number]
                resolved.append(
                    replace(
                        page, text=transcript, image=None, route=PageRoute.VISION, positions=placed
                    )
                )
            else:
                resolved.append(replace(page, image=None, route=PageRoute.TEXT))
        return resolved, len(vision)

    async def _contextualize(
        self, document: Document, chunks: list[Chunk], pages: Sequence[Page]
    ) -> list[Chunk]:
        if isinstance(self.contextualizer, PageContextualizer):
            texts = await self.contextualizer.contextualize_pages(document, chunks, pages)
            return [
                replace(chunk, embed_text=text or chunk.text)
                for chunk, text in zip(chunks, texts, strict=True)
            ]
        full_text = "\n\n".join(page.text for page in pages if page.text.strip())

        async def one(chunk: Chunk) -> Chunk:
            text = await self.contextualizer.contextualize(document, chunk, full_text=full_text)
            return replace(chunk, embed_text=text or chunk.text)

        return await bounded(self.config.concurrency, chunks, one)

    async def _embed(
        self,
        root: Span,
        scope: Scope,
        timings: dict[str, float],
        texts: Sequence[str],
        progress: ProgressListener | None = None,
    ) -> list[tuple[float, ...]]:
        """The embed stage: ``texts``' vectors in order, timed into ``timings``."""
        with timed_stage(
            root, timings, "embed_ms", "embed", cpu_key="embed_cpu_ms", model=self.embedder.model
        ) as span:
            vectors = await embed_texts(
                embedder_for(self.embedder, scope),
                texts,
                self.config.embed_batch_size,
                self.config.concurrency,
                on_progress=progress,
            )
            span.set(vectors=len(vectors))
        return vectors


def _chunk_all(
    chunker: Chunker, document: Document, pages: Sequence[Page], size: int, overlap: int
) -> list[Chunk]:
    return list(chunker.chunk(document, pages, size=size, overlap=overlap))


def _classify_all(classifier: PageClassifier, pages: Sequence[Page]) -> list[PageRoute]:
    return [classifier.classify(page) for page in pages]
