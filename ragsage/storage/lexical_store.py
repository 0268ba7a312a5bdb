"""Keyword search over the stored, generated ``tsvector`` column."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.errors import InvalidRequest
from ragsage.storage.config import safe_identifier
from ragsage.storage.rows import ACTIVE_GENERATION, CHUNK_COLUMNS, chunk_from_row, filter_sql
from ragsage.storage.sessions import scoped
from ragsage.types import Chunk, Scope, ScoredChunk, SearchFilters

if TYPE_CHECKING:
    from ragsage.storage.database import Database

MAX_QUERY_CHARS = 10_000
# Quotes, a leading minus or a bare "or" mean the user wrote search syntax.
_SEARCH_SYNTAX = re.compile(r'"|(^|\s)-\w|\sor\s', re.IGNORECASE)


# A term matching more chunks than this is too common to pick candidates with.
COMMON_TERM_ROWS = 2000
# With only common terms, rank at most this many rows that contain all of them.
COMMON_SAMPLE_ROWS = 5000
_ANY = "array_to_string(ARRAY(SELECT quote_literal(t) FROM unnest(CAST(:{0} AS text[])) t), ' | ')"
_ALL = "array_to_string(ARRAY(SELECT quote_literal(t) FROM unnest(CAST(:{0} AS text[])) t), ' & ')"


class PgLexicalStore:
    """The LexicalStore port over the ``lexical`` column of ``ragsage_chunks``.

    ``index`` writes nothing, and that is not a stub: the column is generated
    by the database from rows :class:`PgVectorStore` already wrote.

    A plain question matches chunks holding any of its terms, ranked by
    ``ts_rank`` (length-normalised, headings weighted above text) against all
    of them.  Requiring every term, as ``websearch_to_tsquery`` does, would make
    most natural questions miss; ranking every chunk that holds any term makes
    a common word cost tens of milliseconds on a large corpus.  So candidates
    come from the query's *distinctive* terms only — those in at most
    :data:`COMMON_TERM_ROWS` chunks of the namespace, counted with a capped
    index scan — while every term still counts toward the rank.  A query made
    only of common terms ranks a bounded set of chunks holding all of them.
    Text with search syntax (quotes, ``-word``, ``or``) goes through
    ``websearch_to_tsquery`` unchanged, which never raises on bad input.

    ``text_search_config`` must be the configuration the column was built
    with, so it is required rather than defaulted in a second place.
    """

    def __init__(
        self,
        target: Database | AsyncSession,
        *,
        text_search_config: str,
        common_term_rows: int = COMMON_TERM_ROWS,
        common_sample_rows: int = COMMON_SAMPLE_ROWS,
    ) -> None:
        self._target = target
        self._config = safe_identifier(text_search_config)
        self.common_term_rows, self.common_sample_rows = common_term_rows, common_sample_rows

    async def index(self, scope: Scope, chunks: Sequence[Chunk]) -> None:
        return None

    async def search(
        self, scope: Scope, query: str, *, k: int, filters: SearchFilters | None = None
    ) -> Sequence[ScoredChunk]:
        if not query.strip() or k < 1:
            return []
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidRequest(
                f"the search text is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}"
            )
        where, params = filter_sql(filters)
        async with scoped(self._target, scope) as session:
            if _SEARCH_SYNTAX.search(query):
                candidates = ranking = f"websearch_to_tsquery('{self._config}'::regconfig, :query)"
                sample = ""
            else:
                counted = await self._term_counts(session, query)
                if not counted:
                    return []
                rare = [term for term, rows in counted if rows <= self.common_term_rows]
                params["all_terms"] = [term for term, _ in counted]
                ranking = f"CAST({_ANY.format('all_terms')} AS tsquery)"
                if rare:
                    params["rare_terms"] = rare
                    candidates, sample = f"CAST({_ANY.format('rare_terms')} AS tsquery)", ""
                else:
                    candidates = f"CAST({_ALL.format('all_terms')} AS tsquery)"
                    sample = f" LIMIT {int(self.common_sample_rows)}"
            rows = await session.execute(
                text(
                    f"WITH q AS (SELECT {candidates} AS candidates, {ranking} AS ranking), "
                    f"hits AS (SELECT {CHUNK_COLUMNS}, c.lexical FROM ragsage_chunks c, q "
                    f"WHERE numnode(q.candidates) > 0 AND c.generation = {ACTIVE_GENERATION} "
                    f"AND c.lexical @@ q.candidates{where}{sample}) "
                    "SELECT c.document_id, c.ordinal, c.text, c.embed_text, c.heading_path, "
                    "c.page_numbers, c.metadata, c.source, c.created_at, "
                    "ts_rank(c.lexical, q.ranking, 1) AS rank FROM hits c, q "
                    "ORDER BY rank DESC, c.document_id, c.ordinal LIMIT :k"
                ),
                {"query": query, "k": k, **params},
            )
            return [
                ScoredChunk(
                    chunk=chunk_from_row(row), score=float(row[9]), keyword_score=float(row[9])
                )
                for row in rows
            ]

    async def _term_counts(self, session: AsyncSession, query: str) -> list[tuple[str, int]]:
        """The query's stemmed terms, each with how many chunks hold it (capped)."""
        rows = await session.execute(
            text(
                "SELECT t.term, (SELECT count(*) FROM (SELECT 1 FROM ragsage_chunks c "
                f"WHERE c.generation = {ACTIVE_GENERATION} "
                "AND c.lexical @@ CAST(quote_literal(t.term) AS tsquery) "
                f"LIMIT {int(self.common_term_rows) + 1}) capped) "
                "FROM (SELECT DISTINCT unnest(tsvector_to_array("
                f"to_tsvector('{self._config}'::regconfig, :query))) AS term) t ORDER BY t.term"
            ),
            {"query": query},
        )
        return [(str(row[0]), int(row[1])) for row in rows]

    async def delete(self, scope: Scope, document_id: str) -> None:
        return None  # the rows belong to PgVectorStore, which deletes them
