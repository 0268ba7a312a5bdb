"""The bodies of uploads and documents (:mod:`api.routes.documents`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from api.schemas.common import PrincipalName
from ragsage.core.scopes import MAX_PRINCIPALS
from ragsage.query.requests import Strict

# The longest document-list cursor accepted: cursors are document ids, never this long.
MAX_CURSOR_CHARS = 512
# A document-name filter longer than any file name is a mistake, not a search.
MAX_NAME_FILTER_CHARS = 256


class UploadFields(Strict):
    """What describes an upload besides its bytes."""

    filename: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f]+$")
    media_type: str | None = Field(default=None, max_length=200)
    metadata: dict[str, str | int | float | bool] = Field(default_factory=dict)
    external_id: str | None = Field(default=None, min_length=1, max_length=512)
    job_class: Literal["interactive", "bulk"] = Field(
        default="interactive",
        description=(
            "interactive (the default: someone waits for this file) runs before the "
            "namespace's bulk backlog; send bulk for files of a large batch."
        ),
    )
    namespace: str | None = Field(
        default=None, description="Ignored: the namespace always comes from the API key."
    )
    access: list[PrincipalName] | None = Field(
        default=None,
        max_length=MAX_PRINCIPALS,
        description=(
            "Principals who may read the document (for example group:sales); [] opens it "
            "to the whole namespace.  Absent: a new document gets the key's own principals "
            "(open, for a key bound to none), a new version keeps the document's list.  A "
            "key bound to principals may name only a non-empty subset of them (else 403)."
        ),
    )


class DocumentUpload(UploadFields):
    """A document as JSON, its bytes base64-encoded."""

    content_base64: str = Field(
        min_length=4,
        pattern=(
            r"^(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
            r"|^(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)$"
        ),
        description="The file's bytes, standard base64 with padding.",
    )


class AccessChange(Strict):
    """A document's new access list."""

    access: list[PrincipalName] = Field(
        max_length=MAX_PRINCIPALS,
        description=(
            "Principals who may read the document; [] opens it to the whole namespace "
            "(not for a key bound to principals, which may name only a non-empty subset "
            "of its own)."
        ),
    )


class DocumentOut(BaseModel):
    id: str
    external_id: str
    filename: str | None
    title: str
    media_type: str | None
    size_bytes: int | None
    status: Literal["queued", "processing", "ready", "failed"]
    error: str | None
    content_hash: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    access: list[str] = Field(description="Principals who may read it; empty: the whole namespace.")


class DocumentList(BaseModel):
    documents: list[DocumentOut]
    next_cursor: str | None


class UploadResponse(BaseModel):
    document_id: str
    job_id: str | None
    state: Literal["queued", "running", "succeeded", "failed", "cancelled", "superseded"]
    duplicate: bool
