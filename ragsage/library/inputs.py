"""The small document shape the facade indexes from text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragsage.core.errors import InvalidRequest
from ragsage.core.identity import content_hash

_FIELDS = ("id", "content", "metadata", "source", "title", "created_at")


@dataclass(frozen=True, slots=True)
class TextDocument:
    """A document given as text: what :meth:`ragsage.RAG.index_document` takes."""

    id: str
    content: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None
    title: str | None = None
    created_at: datetime | None = None


def as_text_document(value: object) -> TextDocument:
    """Accept a TextDocument, a mapping with its fields, or any object that has them."""
    if isinstance(value, TextDocument):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(str(key) for key in value if key not in _FIELDS)
        if unknown:
            raise InvalidRequest(
                f"unknown document field(s) {', '.join(unknown)}; known: {', '.join(_FIELDS)}"
            )
        fields = dict(value)
    else:
        fields = {name: getattr(value, name) for name in _FIELDS if hasattr(value, name)}
    for required in ("id", "content"):
        if not isinstance(fields.get(required), str):
            raise InvalidRequest(f"a document needs a string {required!r}")
    metadata = fields.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidRequest(f"document metadata must be a mapping, got {type(metadata).__name__}")
    created_at = fields.get("created_at")
    if created_at is not None and not isinstance(created_at, datetime):
        raise InvalidRequest("document created_at must be a datetime")
    return TextDocument(
        id=fields["id"],
        content=fields["content"],
        metadata=dict(metadata),
        source=_optional_str(fields.get("source"), "source"),
        title=_optional_str(fields.get("title"), "title"),
        created_at=created_at,
    )


def _optional_str(value: object, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidRequest(f"document {name} must be a string, got {type(value).__name__}")


def text_document(
    text: str,
    document_id: str | None,
    title: str | None,
    source: str | None,
    metadata: Mapping[str, Any] | None,
    created_at: datetime | None,
) -> TextDocument:
    """The document :meth:`ragsage.RAG.index_text` stores; without an id, one from the text."""
    if not isinstance(text, str):
        raise InvalidRequest(f"text must be a string, got {type(text).__name__}")
    if document_id is not None and (not isinstance(document_id, str) or not document_id.strip()):
        raise InvalidRequest(f"document_id must be a non-empty string, got {document_id!r}")
    chosen = document_id or f"text_{content_hash(text.encode('utf-8'))[:20]}"
    return as_text_document(
        TextDocument(
            id=chosen,
            content=text,
            metadata=dict(metadata or {}),
            source=source,
            title=title,
            created_at=created_at,
        )
    )
