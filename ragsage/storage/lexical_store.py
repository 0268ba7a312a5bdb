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


class PgLexicalStore:
    """The LexicalStore port over the ``lexical`` column of ``ragsage_chunks``.

    ``index`` writes nothing, and that is not a stub: the column is generated
    by the database from rows :class:`PgVectorStore` already wrote.

    A plain question is matched as any of its words (OR), ranked by
    ``ts_rank`` with length normalisation; requiring every word, as
    ``websearch_to_tsquery`` does, would make most natural questions miss.
    Text with search syntax (quotes, ``-word``, ``or``) goes through
    ``websearch_to_tsquery``, which never raises on malformed input.

    ``text_search_config`` must be the configuration the column was built
    with, so it is required rather than defaulted in a second place.
    """

    def __init__(self, target: Database | AsyncSession, *, text_search_config: str) -> None:
        self._target = target
        self._config = safe_identifier(text_search_config)

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
        cfg = self._config
        if _SEARCH_SYNTAX.search(query):
            tsquery = f"websearch_to_tsquery('{cfg}'::regconfig, :query)"
        else:
            tsquery = (
                f"replace(plainto_tsquery('{cfg}'::regconfig, :query)::text, ' & ', ' | ')::tsquery"
            )
        where, params = filter_sql(filters)
        async with scoped(self._target, scope) as session:
            rows = await session.execute(
                text(
                    f"WITH q AS (SELECT {tsquery} AS query) "
                    f"SELECT {CHUNK_COLUMNS}, ts_rank(c.lexical, q.query, 1) AS rank "
                    "FROM ragsage_chunks c, q "
                    f"WHERE numnode(q.query) > 0 AND c.generation = {ACTIVE_GENERATION} "
                    f"AND c.lexical @@ q.query{where} "
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

    async def delete(self, scope: Scope, document_id: str) -> None:
        return None  # the rows belong to PgVectorStore, which deletes them
