"""What the facade's indexing calls do: text and files prepared, then written in order.

Every document is prepared (parsed, chunked, embedded) before any is written,
so a batch that fails on its third file has stored nothing of the first two.
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ragsage.core.chunks import Chunk
from ragsage.core.documents import RawSource
from ragsage.core.errors import DocumentError, InvalidRequest
from ragsage.core.identity import document_id_for, legacy_document_id_for
from ragsage.ingestion import IngestionPipeline, PreparedDocument
from ragsage.library.backends import Backend
from ragsage.library.inputs import TextDocument


async def index_documents(backend: Backend, documents: Sequence[TextDocument]) -> list[Chunk]:
    """Index text documents; their stored chunks, in order."""
    pipeline = await backend.pipeline()
    prepared = [
        await _prepare(
            backend,
            pipeline,
            text_source(document),
            document.id,
            document.title,
            document.created_at,
        )
        for document in documents
    ]
    return await _write_all(backend, pipeline, prepared)


async def index_file(
    backend: Backend,
    path: str | Path,
    document_id: str | None,
    title: str | None,
    metadata: Mapping[str, Any] | None,
) -> list[Chunk]:
    """Index one file of any format the parser reads; its stored chunks."""
    namespace = backend.scope.namespace
    source, chosen = await asyncio.to_thread(read_file, namespace, path, document_id, metadata)
    if document_id is None:
        # A file indexed before ids included the namespace keeps its old id, so
        # indexing it again replaces it rather than colliding with it.
        legacy = legacy_document_id_for(str(Path(path).resolve()))
        if await backend.document(legacy) is not None:
            chosen = legacy
    pipeline = await backend.pipeline()
    prepared = await _prepare(backend, pipeline, source, chosen, title, None)
    return await _write_all(backend, pipeline, [prepared])


async def reindex(backend: Backend, document_id: str, content: str | None) -> list[Chunk]:
    """Chunk and embed a stored document again: from its kept pages, or from new text."""
    document = await backend.document(document_id)
    if document is None:
        raise InvalidRequest(
            f"no document {document_id!r} in namespace {backend.scope.namespace!r}"
        )
    pipeline = await backend.pipeline()
    if content is not None:
        metadata = {k: v for k, v in document.metadata.items() if k != "title"}
        replacement = TextDocument(
            id=document.id,
            content=content,
            metadata=metadata,
            source=document.source,
            title=document.title,
            created_at=None,
        )
        prepared = await _prepare(
            backend, pipeline, text_source(replacement), document.id, document.title, None
        )
    else:
        pages = await backend.pages(document)
        prepared = await pipeline.prepare_from_pages(backend.scope, document, pages)
    return await _write_all(backend, pipeline, [prepared])


async def _prepare(
    backend: Backend,
    pipeline: IngestionPipeline,
    source: RawSource,
    document_id: str,
    title: str | None,
    created_at: datetime | None,
) -> PreparedDocument:
    prepared = await pipeline.prepare(
        backend.scope, source, document_id=document_id, created_at=created_at
    )
    return retitled(prepared, title) if title else prepared


async def _write_all(
    backend: Backend, pipeline: IngestionPipeline, prepared: Sequence[PreparedDocument]
) -> list[Chunk]:
    for one in prepared:
        await backend.write(pipeline, one)
    return [chunk for one in prepared for chunk in one.chunks]


def text_source(document: TextDocument) -> RawSource:
    """The document as a source the parser reads as Markdown, so headings structure it."""
    return RawSource(
        content=document.content.encode("utf-8"),
        filename=document.source or document.title or document.id,
        media_type="text/markdown",
        metadata=dict(document.metadata),
    )


def read_file(
    namespace: str, path: str | Path, document_id: str | None, metadata: Mapping[str, Any] | None
) -> tuple[RawSource, str]:
    """The file as a source, and its document id (given, or derived from the full path)."""
    location = Path(path)
    try:
        data = location.read_bytes()
    except OSError as exc:
        raise DocumentError(str(location), f"cannot be read ({exc.strerror or exc})") from exc
    media_type, _ = mimetypes.guess_type(location.name)
    source = RawSource(
        content=data, filename=location.name, media_type=media_type, metadata=dict(metadata or {})
    )
    # The full path, not the name: two README.md files in different folders are two documents.
    return source, document_id or document_id_for(namespace, str(location.resolve()))


def retitled(prepared: PreparedDocument, title: str) -> PreparedDocument:
    """The prepared document and each of its chunks under the title the caller gave."""
    records = tuple(
        replace(
            record,
            chunk=replace(record.chunk, metadata={**record.chunk.metadata, "title": title}),
        )
        for record in prepared.records
    )
    return replace(prepared, document=replace(prepared.document, title=title), records=records)
