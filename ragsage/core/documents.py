"""Documents at each step: an upload's bytes, the knowledge base's record of it, the
service's row with its status, and who may read it."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ragsage.core.errors import Forbidden
from ragsage.core.scopes import Scope, check_principals


@dataclass(frozen=True, slots=True)
class RawSource:
    """An uploaded file as bytes, before anything has looked inside it."""

    content: bytes
    filename: str
    media_type: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Document:
    """A document as the knowledge base records it."""

    id: str
    content_hash: str
    title: str
    source: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """One document row with its ingestion status."""

    id: str
    external_id: str
    filename: str | None
    title: str
    media_type: str | None
    size_bytes: int | None
    status: str
    error: str | None
    content_hash: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    # Principals who may read it; empty: the whole namespace.
    access: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "external_id": self.external_id,
            "filename": self.filename,
            "title": self.title,
            "media_type": self.media_type,
            "size_bytes": self.size_bytes,
            "status": self.status,
            "error": self.error,
            "content_hash": self.content_hash,
            "metadata": self.metadata,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "access": list(self.access),
        }


def upload_access(scope: Scope, requested: Collection[str] | None) -> frozenset[str] | None:
    """The access list an upload asks for, checked against the uploader's principals.

    None: the upload names none (a new document then gets the key's own
    principals, or is open to the namespace for a key bound to none).  A key
    bound to principals may name only a non-empty subset of them.
    """
    if requested is None:
        return None
    names = check_principals(list(requested))
    if scope.principals is not None and (not names or not names <= scope.principals):
        raise Forbidden(
            "this key may give a document only an access list within its own principals "
            f"({', '.join(sorted(scope.principals))})"
        )
    return names
