"""Dense vectors in Postgres: whole-document replacement on write, HNSW search on read."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import psycopg
from pgvector import Vector
from pgvector.psycopg import register_vector_async
from psycopg.types.json import Jsonb
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.dense_function import dense_function_name
from ragsage.adapters.postgres.dense_statements import (
    EXACT_BELOW,
    EXACT_CAP,
    KEY_COLUMNS,
    SHARE_FACTOR,
    DensePath,
    DensePaths,
    dense_statement,
    vector_literal,
    with_nearest_rows,
)
from ragsage.adapters.postgres.generations import write_generation
from ragsage.adapters.postgres.isolation import set_local, to_driver_style
from ragsage.adapters.postgres.rows import (
    CHUNK_COLUMNS,
    NAMESPACE_ACTIVE_GENERATION,
    chunk_from_row,
    filter_arguments,
    stored_metadata,
)
from ragsage.adapters.postgres.sessions import read_rows, scoped, translate
from ragsage.core.chunks import Chunk, EmbeddedChunk, Ranked, ScoredChunk, chunk_id, split_chunk_id
from ragsage.core.errors import InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.generations import EmbeddingModelMismatch, Generation
from ragsage.core.scopes import Scope
from ragsage.core.text import identifier_words

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database

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
# statement, while the document rows are locked (see :meth:`PgVectorStore.upsert`).
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


# A ``choose`` statement's ``path`` column, as the path to remember.
_TAKEN: dict[str, DensePath] = {"walk": "walk", "own": "own", "exact": "exact"}


async def _driver(session: AsyncSession) -> psycopg.AsyncConnection[Any]:
    """The session's psycopg connection, able to send vectors in binary COPY."""
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    if driver.adapters.types.get("vector") is None:
        await register_vector_async(driver)
    return cast("psycopg.AsyncConnection[Any]", driver)


class PgVectorStore:
    """The VectorStore port over ``ragsage_chunks``; it writes every column of a chunk row.

    Every row records the embedding model and generation it belongs to, so a
    namespace can never silently mix models: a write or search with another
    model than the namespace's active one raises
    :class:`~ragsage.adapters.postgres.generations.EmbeddingModelMismatch`.

    ``generation`` makes :meth:`search` read that live generation instead of the
    active one, so a re-index can be evaluated before it switches; writes are
    unaffected.
    """

    def __init__(
        self,
        target: Database | AsyncSession,
        *,
        embedding_model: str,
        embedding_dim: int,
        ef_search: int | None = None,
        embedder_kind: str = "hashing",
        generation: int | None = None,
        paths: DensePaths | None = None,
        chunking: str | None = None,
    ) -> None:
        if not 1 <= embedding_dim <= 2000:
            raise ValueError(f"embedding_dim must be between 1 and 2000, got {embedding_dim}")
        self._target = target
        self.embedding_model, self.embedding_dim = embedding_model, embedding_dim
        self.ef_search = ef_search
        self.embedder_kind = embedder_kind
        self.generation = generation
        self.paths = paths if paths is not None else DensePaths()
        # Recorded with every row written (see copy_with_vectors); None: never reused.
        self.chunking = chunking

    async def upsert(self, scope: Scope, records: Sequence[EmbeddedChunk]) -> None:
        """Replace every chunk of the documents in ``records`` with ``records``.

        Delete-by-document, then insert: a re-chunk into fewer pieces must not
        leave the old tail searchable.  All of one document's chunks must come in
        one call.  Rows are written with COPY, not one INSERT each.
        """
        if not records:
            return
        for record in records:
            self._check_vector(record.vector)
        async with scoped(self._target, scope) as session:
            documents = sorted({record.chunk.document_id for record in records})
            generation = await self._clear_documents(session, scope, documents)
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
                            self.embedding_model,
                            self.embedding_dim,
                            Vector(list(record.vector)),
                            chunk.start_char,
                            chunk.end_char,
                            self.chunking,
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
        if not isinstance(self._target, AsyncSession):
            # Committed by now; a caller's own session is its to commit (and refresh).
            await self._target.refresh_statistics()

    async def copy_with_vectors(
        self,
        scope: Scope,
        document_id: str,
        source_generation: int,
        vectors: Sequence[tuple[int, tuple[float, ...]]],
    ) -> int:
        """Write a document's rows of ``source_generation`` again with new vectors.

        A re-index whose chunking is unchanged (storage migration 26) sends
        only each chunk's ordinal and vector; text, headings, spans and the
        keyword column are copied inside the database, not rebuilt.  Returns
        the rows written, which the caller compares with what it sent.
        """
        for _, vector in vectors:
            self._check_vector(vector)
        async with scoped(self._target, scope) as session:
            generation = await self._clear_documents(session, scope, [document_id])
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
                    "model": self.embedding_model,
                    "dim": self.embedding_dim,
                    "source": source_generation,
                    "document": document_id,
                },
            )
            await session.execute(text("DELETE FROM ragsage_vector_rows"))
        if not isinstance(self._target, AsyncSession):
            await self._target.refresh_statistics()
        return int(getattr(moved, "rowcount", 0) or 0)

    async def _clear_documents(
        self, session: AsyncSession, scope: Scope, documents: Sequence[str]
    ) -> Generation:
        """The generation written into, with the documents' rows in it deleted."""
        generation = await write_generation(
            session, scope, self.embedding_model, self.embedding_dim, self.embedder_kind
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

    async def search(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
    ) -> Sequence[ScoredChunk]:
        """Nearest chunks by cosine distance, scored as cosine similarity.

        One statement reads the searched generation, walks the HNSW index and,
        only when the walk came back short, ranks the namespace's rows exactly
        (see :func:`dense_statement`): a small namespace beside a big one gets
        ``k`` chunks whenever it has them.
        """
        ranked = await self.rank_vectors(scope, query_vector, k=k, filters=filters, rows=k)
        return [
            ScoredChunk(chunk=r.chunk, score=r.score, vector_score=r.score)
            for r in ranked
            if r.chunk is not None  # always so: every row carries its chunk
        ]

    async def rank_vectors(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        *,
        k: int,
        filters: SearchFilters | None = None,
        rows: int = 0,
    ) -> Sequence[Ranked]:
        """:meth:`search`'s ranking by chunk id; the first ``rows`` carry their chunk."""
        found = await self._nearest(scope, query_vector, k, filters, max(0, rows))
        ranked = [
            Ranked(
                chunk_id(str(row[0]), int(row[1])),
                float(row[2]),
                chunk_from_row(row[3:]) if row[3] is not None else None,
            )
            for row in found
        ]
        ranked.sort(key=lambda r: (-r.score, r.chunk_id))
        return ranked

    async def fetch_chunks(self, scope: Scope, chunk_ids: Sequence[str]) -> Sequence[Chunk]:
        """The searched generation's chunks among ``chunk_ids``, in the order asked."""
        rows = await self._rows_by_id(scope, chunk_ids, CHUNK_COLUMNS)
        found = {chunk.id: chunk for chunk in map(chunk_from_row, rows)}
        return [found[value] for value in chunk_ids if value in found]

    async def vectors(self, scope: Scope, chunk_ids: Sequence[str]) -> dict[str, tuple[float, ...]]:
        """The stored vectors of the searched generation's chunks among ``chunk_ids``."""
        columns = f"{KEY_COLUMNS}, CAST(c.embedding AS real[])"
        rows = await self._rows_by_id(scope, chunk_ids, columns)
        return {chunk_id(str(d), int(o)): tuple(map(float, v)) for d, o, v in rows if v}

    async def _rows_by_id(
        self, scope: Scope, chunk_ids: Sequence[str], columns: str
    ) -> list[tuple[Any, ...]]:
        """``columns`` of the searched generation's rows among ``chunk_ids`` (any order)."""
        wanted = [key for key in map(split_chunk_id, chunk_ids) if key is not None]
        if not wanted:
            return []
        searched = (
            NAMESPACE_ACTIVE_GENERATION
            if self.generation is None
            else "CAST(:generation AS integer)"
        )
        sql = (
            f"SELECT {columns} FROM unnest(CAST(:documents AS text[]), "
            "CAST(:ordinals AS integer[])) AS w(document_id, ordinal) "
            "JOIN ragsage_chunks c ON c.namespace = :namespace "
            "AND c.document_id = w.document_id AND c.ordinal = w.ordinal "
            f"AND c.generation = {searched}"
        )
        params = {
            "namespace": scope.namespace,
            "documents": [document for document, _ in wanted],
            "ordinals": [ordinal for _, ordinal in wanted],
            "generation": self.generation,
        }
        return await read_rows(self._target, scope, [(to_driver_style(sql), params)])

    async def _nearest(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        k: int,
        filters: SearchFilters | None,
        carried: int,
    ) -> list[tuple[Any, ...]]:
        """The nearest rows as ``(document_id, ordinal, similarity, chunk columns...)``.

        Only the nearest ``carried`` rows carry their chunk columns (nulls for
        the others).  A search without filters whose namespace's size is known
        calls the width's search function, whose plans the connection keeps;
        the others send :func:`dense_statement`.  Raises
        :class:`EmbeddingModelMismatch` when the searched generation holds
        another model's vectors.
        """
        self._check_vector(query_vector)
        if k < 1:
            return []
        rows = None
        if scope.principals is not None:
            rows = await self._nearest_readable(scope, query_vector, k, filters, carried)
        path = self.paths.path(scope.namespace, self.generation)
        if rows is None and path != "choose" and (filters is None or filters.is_empty):
            rows = await self._nearest_planned(scope, query_vector, k, carried, path)
        if rows is None:
            rows = await self._nearest_by_statement(scope, query_vector, k, filters, path, carried)
        if not rows:
            if self.generation is not None:
                raise InvalidRequest(
                    f"namespace {scope.namespace!r} has no active or building generation "
                    f"{self.generation}"
                )
            return []
        model, dim = str(rows[0][1]), int(rows[0][2])
        if (model, dim) != (self.embedding_model, self.embedding_dim):
            chosen = Generation(int(rows[0][0]), model, dim, "active")
            raise EmbeddingModelMismatch(
                scope.namespace, chosen, self.embedding_model, self.embedding_dim
            )
        exact = any(row[3] for row in rows if row[3] is not None)
        return [row[4:] for row in rows if row[3] is not None and bool(row[3]) == exact]

    async def _nearest_planned(
        self, scope: Scope, query_vector: tuple[float, ...], k: int, carried: int, path: DensePath
    ) -> list[tuple[Any, ...]] | None:
        """The width's search function's rows, or None when the width has no function.

        Its rows are ``(generation id, model, width, exact, document_id,
        ordinal, similarity, chunk columns...)``, as the statement's are once
        ``path`` is dropped.  The function walks the namespace's own graph
        whenever it has one; ``path`` only sets how wide that walk looks.
        """
        if isinstance(self._target, AsyncSession) or self.embedding_dim in self.paths.unplanned:
            return None  # a caller's session: a failed call would end its transaction
        call = (
            f"SELECT * FROM {dense_function_name(self.embedding_dim)}(CAST(%(query)s AS vector), "
            "%(k)s, %(carried)s, %(exact)s, CAST(%(generation)s AS integer))"
        )
        params = {
            "query": vector_literal(query_vector),
            "k": k,
            "carried": carried,
            "exact": path == "exact",
            "generation": self.generation,
        }
        try:
            return await self._target.read(scope, [*self._tuning(path), (call, params)])
        except psycopg.errors.UndefinedFunction:
            self.paths.unplanned.add(self.embedding_dim)
            return None
        except (SQLAlchemyError, psycopg.Error) as exc:
            raise translate(exc) from exc

    async def _nearest_readable(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        k: int,
        filters: SearchFilters | None,
        carried: int,
    ) -> list[tuple[Any, ...]] | None:
        """A bound session's ranking of the few chunks it may read, or None.

        None when the session reads too much of the namespace for that to pay
        (remembered for a while, as the namespace's own path is): it then
        walks the graph as any session does, under the policies.  The rows
        are the width search function's (functions/readable_nearest.sql).
        """
        principals = scope.principals
        if self.paths.path(scope.namespace, self.generation, principals) == "walk":
            return None
        call = (
            "SELECT * FROM ragsage_readable_nearest(CAST(%(query)s AS vector), %(k)s, "
            "%(carried)s, CAST(%(generation)s AS integer), %(below)s, %(cap)s, %(share)s, "
            "CAST(%(ids)s AS text[]), CAST(%(sources)s AS text[]), CAST(%(metadata)s AS jsonb), "
            "CAST(%(after)s AS timestamptz), CAST(%(before)s AS timestamptz))"
        )
        params = {
            "query": vector_literal(query_vector),
            "k": k,
            "carried": carried,
            "generation": self.generation,
            "below": EXACT_BELOW,
            "cap": EXACT_CAP,
            "share": SHARE_FACTOR,
            **filter_arguments(filters),
        }
        rows = await read_rows(self._target, scope, [(call, params)])
        few = not (rows and rows[0][3] is False and rows[0][4] is None)
        self.paths.remember(
            scope.namespace, self.generation, "exact" if few else "walk", principals
        )
        return rows if few else None

    async def _nearest_by_statement(
        self,
        scope: Scope,
        query_vector: tuple[float, ...],
        k: int,
        filters: SearchFilters | None,
        path: DensePath,
        carried: int,
    ) -> list[tuple[Any, ...]]:
        """:func:`dense_statement`'s rows, in the search function's shape.

        What a ``choose`` statement decided is remembered, and its ``path``
        column dropped.
        """
        sql, params = dense_statement(
            self.embedding_dim,
            filters,
            namespace=scope.namespace,
            generation=self.generation,
            columns=KEY_COLUMNS,
            path=path,
            hnsw_type=self.paths.hnsw_type,
        )
        params.update(
            query=vector_literal(query_vector), k=k, generation=self.generation, carried=carried
        )
        statement = (to_driver_style(with_nearest_rows(sql)), params)
        rows = await read_rows(self._target, scope, [*self._tuning(path), statement])
        if path == "choose" and rows and rows[0][3] in _TAKEN:
            self.paths.remember(scope.namespace, self.generation, _TAKEN[rows[0][3]])
        return [row[:3] + row[4:] for row in rows]

    def _tuning(self, path: DensePath = "walk") -> list[tuple[str, Mapping[str, Any]]]:
        # ef_search is not raised to k: with iterative scans the walk simply goes
        # on until it has k rows, so a larger k costs no extra statement.  In the
        # statement the walk-or-sort choice is the planner's (storage migration 15
        # keeps its statistics); the width's function walks whenever it is asked
        # to, which only a namespace found not small is.  A namespace's own graph
        # is walked with its own, wider list (a ``choose`` statement, which does
        # not know yet that the namespace has one, walks with the shared list).
        ef_search = self.ef_search
        if path == "own" and self.paths.graph_ef_search is not None:
            ef_search = max(ef_search or 0, self.paths.graph_ef_search)
        if ef_search is None:
            return []
        return [(set_local("hnsw.ef_search", str(int(ef_search))), {})]

    async def delete(self, scope: Scope, document_id: str) -> None:
        """Remove the document's chunks from every generation."""
        async with scoped(self._target, scope) as session:
            await session.execute(
                text(
                    "DELETE FROM ragsage_chunks "
                    "WHERE namespace = :namespace AND document_id = :document_id"
                ),
                {"namespace": scope.namespace, "document_id": document_id},
            )

    def _check_vector(self, vector: Sequence[float]) -> None:
        if len(vector) != self.embedding_dim:
            raise InvalidRequest(
                f"vector has {len(vector)} dimensions; this store holds {self.embedding_dim}"
            )
        # One C-level sum settles the common case: it is finite only if every value
        # is (or huge values overflowed it, which the exact check then clears).
        if not math.isfinite(sum(vector)) and not all(math.isfinite(v) for v in vector):
            raise InvalidRequest("vector contains NaN or infinite values")
