"""Content-derived identities: the hash that dedups uploads and keys the parse cache."""

from __future__ import annotations

import hashlib


def content_hash(content: bytes) -> str:
    """The SHA-256 of a document's bytes, hex-encoded."""
    return hashlib.sha256(content).hexdigest()


def document_id_for(namespace: str, source_name: str) -> str:
    """A stable document id for a source name in a namespace, so re-ingesting replaces it.

    Derived from the name, not the bytes: a changed file keeps its id and its new
    chunks replace the old ones, while identical bytes are caught separately by
    the content hash.  The namespace is part of it, so one tenant cannot predict
    (or recognise) the ids another tenant's documents get.
    """
    digest = hashlib.sha256(f"{namespace}\x00{source_name}".encode()).hexdigest()
    return f"doc_{digest[:20]}"


def legacy_document_id_for(source_name: str) -> str:
    """The id a document got before ids included the namespace; such documents keep it."""
    digest = hashlib.sha256(source_name.encode("utf-8")).hexdigest()
    return f"doc_{digest[:20]}"
