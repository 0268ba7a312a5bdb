"""Chunk rows: the columns read back, filters as SQL, and rows as domain values."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ragsage.core.chunks import Chunk, ChunkSection, chunk_id
from ragsage.core.filters import SearchFilters

CHUNK_COLUMNS = (
    "c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, c.page_numbers, "
    "c.metadata, c.source, c.created_at, c.start_char, c.end_char"
)
# How many columns :data:`CHUNK_COLUMNS` reads; a query's own columns follow them.
CHUNK_COLUMN_COUNT = 11
# The active generation of the namespace bound as ``:namespace``, as a subquery.
NAMESPACE_ACTIVE_GENERATION = (
    "(SELECT g.id FROM ragsage_generations g WHERE g.namespace = :namespace AND g.state = 'active')"
)


# The key of a chunk row's metadata that holds its sections (``Chunk.sections``):
# kept in the metadata document so every statement that reads, copies or moves
# chunk rows carries them without a column of their own.  Read back into
# ``sections``, never shown as metadata.
SECTIONS_KEY = "ragsage:sections"


def stored_metadata(chunk: Chunk) -> dict[str, Any]:
    """The metadata document a chunk row stores: its metadata and its sections."""
    stored = {key: value for key, value in chunk.metadata.items() if key != SECTIONS_KEY}
    if chunk.sections:
        stored[SECTIONS_KEY] = [section.to_dict() for section in chunk.sections]
    return stored


def chunk_from_row(row: Sequence[Any]) -> Chunk:
    """A :class:`Chunk` from the first :data:`CHUNK_COLUMN_COUNT` columns of a row."""
    document_id, ordinal = str(row[0]), int(row[1])
    metadata = dict(row[6] or {})
    sections = metadata.pop(SECTIONS_KEY, None) or ()
    return Chunk(
        id=chunk_id(document_id, ordinal),
        document_id=document_id,
        ordinal=ordinal,
        text=row[2],
        embed_text=row[3],
        heading_path=tuple(row[4] or ()),
        page_numbers=tuple(row[5] or ()),
        metadata=metadata,
        source=row[7],
        created_at=row[8],
        start_char=int(row[9] or 0),
        end_char=int(row[10] or 0),
        sections=tuple(ChunkSection.from_dict(item) for item in sections),
    )


def filter_sql(filters: SearchFilters | None) -> tuple[str, dict[str, Any]]:
    """SQL conditions (each starting with `` AND``) and their parameters for ``filters``."""
    if filters is None or filters.is_empty:
        return "", {}
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if filters.document_ids is not None:
        clauses.append("c.document_id = ANY(:f_document_ids)")
        params["f_document_ids"] = sorted(filters.document_ids)
    if filters.sources is not None:
        clauses.append("c.source = ANY(:f_sources)")
        params["f_sources"] = sorted(filters.sources)
    if filters.metadata:
        # Containment uses the GIN-friendly @> operator and compares JSON values
        # exactly as the in-memory filter compares Python values.
        clauses.append("c.metadata @> CAST(:f_metadata AS jsonb)")
        params["f_metadata"] = json.dumps(dict(filters.metadata))
    if filters.created_after is not None:
        clauses.append("c.created_at >= :f_after")
        params["f_after"] = filters.created_after
    if filters.created_before is not None:
        clauses.append("c.created_at <= :f_before")
        params["f_before"] = filters.created_before
    return "".join(f" AND {clause}" for clause in clauses), params


def filter_arguments(filters: SearchFilters | None) -> dict[str, Any]:
    """``filters`` as the search functions' arguments: ids, sources, metadata, after, before.

    The keyword and readable-nearest functions take them as parameters (None
    for a filter not set), where :func:`filter_sql` writes them as conditions.
    """
    wanted = filters if filters is not None and not filters.is_empty else None
    return {
        "ids": None
        if wanted is None or wanted.document_ids is None
        else sorted(wanted.document_ids),
        "sources": None if wanted is None or wanted.sources is None else sorted(wanted.sources),
        "metadata": json.dumps(dict(wanted.metadata)) if wanted and wanted.metadata else None,
        "after": wanted.created_after if wanted else None,
        "before": wanted.created_before if wanted else None,
    }
