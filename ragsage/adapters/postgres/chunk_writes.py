"""Writing a document's chunk rows: staging, binary COPY, and the move under Row-Level Security.

A write replaces every row of the documents it names in the generation being
written, in the caller's transaction: a crash leaves the old rows or the new
ones, never half of each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector_async
from psycopg.types.json import Jsonb
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.generations import write_generation
from ragsage.adapters.postgres.rows import stored_metadata
from ragsage.core.chunks import EmbeddedChunk
from ragsage.core.generations import Generation
from ragsage.core.scopes import Scope
from ragsage.core.text import identifier_words

_COLUMNS = (
    "namespace, generation, document_id, ordinal, text, embed_text, heading_path, headings, "
    "page_numbers, metadata, source, created_at, embedding_model, embedding_dim, embedding, "
    "start_char, end_char, chunking"
)
# COPY cannot write into a table under Row-Level Security, so rows are copied into
# a temporary staging table and moved with one INSERT ... SELECT, which the
# policy checks row by row.  The staging table lives per connection and empties
# itself at every commit.  Beside the row's columns it holds the identifier
# words of the headings and the text, split here rather than by the database
# (storage migration 25): the move computes the keyword column from them.
_STAGED = f"{_COLUMNS}, heading_words, text_words"
_STAGING = """CREATE TEMP TABLE IF NOT EXISTS ragsage_chunk_rows (
    namespace text, generation integer, document_id text, ordinal integer, text text,
    embed_text text, heading_path text[], headings text, page_numbers integer[],
    metadata jsonb, source text, created_at timestamptz, embedding_model text,
    embedding_dim integer, embedding vector, start_char integer, end_char integer,
    chunking text, heading_words text, text_words text
) ON COMMIT DELETE ROWS"""
_COPY = f"COPY ragsage_chunk_rows ({_STAGED}) FROM STDIN (FORMAT BINARY)"
# Binary COPY skips formatting each float as text, which costs ~40x more per row.
_COPY_TYPES = (
    "text",
    "int4",
    "text",
    "int4",
    "text",
    "text",
    "text[]",
    "text",
    "int4[]",
    "jsonb",
    "text",
    "timestamptz",
    "text",
    "int4",
    "vector",
    "int4",
    "int4",
    "text",
    "text",
    "text",
)
# Each chunk takes its document's access list (migration 22), read in the same
# statement, while the document rows are locked (see :func:`clear_documents`).
# The foreign key is checked at commit, so a library ingestion may write a new
# document's row after its chunks: its chunks then take the list that row will
# start with, the writer's principals (open, for a session bound to none; see
# PgDocumentStore.save).  A window of a long definition gets no keyword terms:
# its definition, stored whole beside it, is what keyword search finds.
_MOVE = (
    f"INSERT INTO ragsage_chunks ({_COLUMNS}, access, lexical) SELECT "
    + ", ".join(f"s.{column.strip()}" for column in _COLUMNS.split(","))
    + ", coalesce(d.access, CAST(:default_access AS text[])), "
    "CASE WHEN s.metadata ? 'window' THEN ''::tsvector ELSE "
    "ragsage_chunk_lexical(s.headings, s.heading_words, s.text, s.text_words) END "
    "FROM ragsage_chunk_rows s "
    "LEFT JOIN ragsage_documents d ON d.namespace = :namespace AND d.namespace = s.namespace "
    "AND d.id = s.document_id"
)


# A re-index with unchanged chunking stages only ordinals and vectors and copies
# the rest of each row from the source generation, keyword column included (the
# trigger of migration 25 fills the column only when it is left out).
_VECTOR_STAGING = """CREATE TEMP TABLE IF NOT EXISTS ragsage_vector_rows (
    ordinal integer, embedding vector
) ON COMMIT DELETE ROWS"""
_VECTOR_COPY = "COPY ragsage_vector_rows (ordinal, embedding) FROM STDIN (FORMAT BINARY)"
# Every written column but those the new generation sets itself, so a column
# added to the row is carried across without a second list to keep in step.
_KEPT = ", ".join(
    [
        column.strip()
        for column in _COLUMNS.split(",")
        if column.strip()
        not in {"namespace", "generation", "embedding_model", "embedding_dim", "embedding"}
    ]
    + ["lexical"]
)
_VECTOR_MOVE = (
    f"INSERT INTO ragsage_chunks (namespace, generation, {_KEPT}, embedding_model, "
    "embedding_dim, embedding, access) SELECT c.namespace, :generation, "
    + ", ".join(f"c.{column.strip()}" for column in _KEPT.split(","))
    + ", :model, :dim, v.embedding, coalesce(d.access, c.access) "
    "FROM ragsage_chunks c JOIN ragsage_vector_rows v ON v.ordinal = c.ordinal "
    "LEFT JOIN ragsage_documents d ON d.namespace = c.namespace AND d.id = c.document_id "
    "WHERE c.namespace = :namespace AND c.generation = :source AND c.document_id = :document"
)


async def _driver(session: AsyncSession) -> psycopg.AsyncConnection[Any]:
    """The session's psycopg connection, able to send vectors in binary COPY."""
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    if driver.adapters.types.get("vector") is None:
        await register_vector_async(driver)
    return cast("psycopg.AsyncConnection[Any]", driver)


async def clear_documents(
    session: AsyncSession,
    scope: Scope,
    documents: Sequence[str],
    *,
    embedding_model: str,
    embedding_dim: int,
    embedder_kind: str,
) -> Generation:
    """The generation written into, with the documents' rows in it deleted."""
    generation = await write_generation(
        session, scope, embedding_model, embedding_dim, embedder_kind
    )
    # A change of a document's access list waits for these rows, and these
    # wait for it: the chunks never keep a list the document no longer has.
    await session.execute(
        text(
            "SELECT 1 FROM ragsage_documents WHERE namespace = :namespace "
            "AND id = ANY(:documents) ORDER BY id FOR SHARE"
        ),
        {"namespace": scope.namespace, "documents": list(documents)},
    )
    await session.execute(
        text(
            "DELETE FROM ragsage_chunks WHERE namespace = :namespace "
            "AND generation = :generation AND document_id = ANY(:documents)"
        ),
        {
            "namespace": scope.namespace,
            "generation": generation.id,
            "documents": list(documents),
        },
    )
    return generation


async def copy_chunks(
    session: AsyncSession,
    scope: Scope,
    generation: Generation,
    records: Sequence[EmbeddedChunk],
    *,
    embedding_model: str,
    embedding_dim: int,
    chunking: str | None,
) -> None:
    """Write ``records`` into ``generation``: COPY to the staging table, then the move."""
    await session.execute(text(_STAGING))
    driver = await _driver(session)
    async with driver.cursor() as cursor, cursor.copy(_COPY) as copy:
        copy.set_types(list(_COPY_TYPES))
        for record in records:
            chunk = record.chunk
            headings = " ".join(chunk.heading_path)
            await copy.write_row(
                (
                    scope.namespace,
                    generation.id,
                    chunk.document_id,
                    chunk.ordinal,
                    chunk.text,
                    chunk.embed_text,
                    list(chunk.heading_path),
                    headings,
                    list(chunk.page_numbers),
                    Jsonb(stored_metadata(chunk)),
                    chunk.source,
                    chunk.created_at,
                    embedding_model,
                    embedding_dim,
                    Vector(list(record.vector)),
                    chunk.start_char,
                    chunk.end_char,
                    chunking,
                    identifier_words(headings),
                    identifier_words(chunk.text),
                )
            )
    await session.execute(
        text(_MOVE),
        {"namespace": scope.namespace, "default_access": sorted(scope.principals or ())},
    )
    # Emptied now, not only at commit: a second upsert in the same
    # transaction must not move these rows again.  DELETE, not TRUNCATE:
    # a truncate swaps the table's files and cost ~1 ms a job.
    await session.execute(text("DELETE FROM ragsage_chunk_rows"))


async def copy_vectors(
    session: AsyncSession,
    scope: Scope,
    generation: Generation,
    document_id: str,
    source_generation: int,
    vectors: Sequence[tuple[int, tuple[float, ...]]],
    *,
    embedding_model: str,
    embedding_dim: int,
) -> int:
    """Write the document's rows of ``source_generation`` into ``generation`` with ``vectors``.

    Returns the rows written.
    """
    await session.execute(text(_VECTOR_STAGING))
    driver = await _driver(session)
    async with driver.cursor() as cursor, cursor.copy(_VECTOR_COPY) as copy:
        copy.set_types(["int4", "vector"])
        for ordinal, vector in vectors:
            await copy.write_row((ordinal, Vector(list(vector))))
    moved = await session.execute(
        text(_VECTOR_MOVE),
        {
            "namespace": scope.namespace,
            "generation": generation.id,
            "model": embedding_model,
            "dim": embedding_dim,
            "source": source_generation,
            "document": document_id,
        },
    )
    await session.execute(text("DELETE FROM ragsage_vector_rows"))
    return int(getattr(moved, "rowcount", 0) or 0)
