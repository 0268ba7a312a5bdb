"""Plain-dict forms of documents and chunks, for snapshots and wire formats."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ragsage.core.chunks import Chunk, ChunkSection
from ragsage.core.documents import Document


def iso_or_none(value: datetime | None) -> str | None:
    """A time as ISO 8601 text, None staying None (how every JSON view writes times)."""
    return value.isoformat() if value is not None else None


def _time_from_str(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def document_to_dict(document: Document) -> dict[str, Any]:
    return {
        "id": document.id,
        "content_hash": document.content_hash,
        "title": document.title,
        "source": document.source,
        "metadata": dict(document.metadata),
        "created_at": iso_or_none(document.created_at),
    }


def document_from_dict(data: dict[str, Any]) -> Document:
    return Document(
        id=str(data["id"]),
        content_hash=str(data["content_hash"]),
        title=str(data["title"]),
        source=str(data["source"]),
        metadata=dict(data.get("metadata") or {}),
        created_at=_time_from_str(data.get("created_at")),
    )


def chunk_to_dict(chunk: Chunk) -> dict[str, Any]:
    return {
        "id": chunk.id,
        "document_id": chunk.document_id,
        "ordinal": chunk.ordinal,
        "text": chunk.text,
        "embed_text": chunk.embed_text,
        "heading_path": list(chunk.heading_path),
        "page_numbers": list(chunk.page_numbers),
        "metadata": dict(chunk.metadata),
        "source": chunk.source,
        "created_at": iso_or_none(chunk.created_at),
        "start_char": chunk.start_char,
        "end_char": chunk.end_char,
        "sections": [section.to_dict() for section in chunk.sections],
    }


def chunk_from_dict(data: dict[str, Any]) -> Chunk:
    return Chunk(
        id=str(data["id"]),
        document_id=str(data["document_id"]),
        ordinal=int(data["ordinal"]),
        text=str(data["text"]),
        embed_text=str(data["embed_text"]),
        heading_path=tuple(str(part) for part in data.get("heading_path", ())),
        page_numbers=tuple(int(number) for number in data.get("page_numbers", ())),
        metadata=dict(data.get("metadata") or {}),
        source=str(data.get("source", "")),
        created_at=_time_from_str(data.get("created_at")),
        start_char=int(data.get("start_char") or 0),
        end_char=int(data.get("end_char") or 0),
        sections=tuple(ChunkSection.from_dict(item) for item in data.get("sections") or ()),
    )
