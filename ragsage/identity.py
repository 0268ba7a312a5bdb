"""Content-derived identities: the hash that dedups uploads and keys the parse cache."""

from __future__ import annotations

import hashlib


def content_hash(content: bytes) -> str:
    """The SHA-256 of a document's bytes, hex-encoded."""
    return hashlib.sha256(content).hexdigest()


def document_id_for(source_name: str) -> str:
    """A stable document id for a source name, so re-ingesting a file replaces it.

    Derived from the name, not the bytes: a changed file keeps its id and its new
    chunks replace the old ones, while identical bytes are caught separately by
    the content hash.
    """
    digest = hashlib.sha256(source_name.encode("utf-8")).hexdigest()
    return f"doc_{digest[:20]}"
