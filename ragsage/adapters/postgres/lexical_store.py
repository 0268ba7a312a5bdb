"""Keyword search over the stored, generated ``tsvector`` column."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.config import safe_identifier
from ragsage.adapters.postgres.isolation import to_driver_style
from ragsage.adapters.postgres.rows import (
    CHUNK_COLUMN_COUNT,
    chunk_from_row,
    filter_arguments,
)
from ragsage.adapters.postgres.sessions import read_rows
from ragsage.core.chunks import Chunk, Ranked, ScoredChunk, chunk_id
from ragsage.core.errors import InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database

MAX_QUERY_CHARS = 10_000
# Quotes, a leading minus or a capitalised "OR" mean the user wrote search
# syntax.  A lowercase "or" is far more often prose ("is a list or a tuple
# faster?"), and syntax mode gives up the IDF weighting.
_SEARCH_SYNTAX = re.compile(r'"|(^|\s)-\w|\sOR\s')


# A term in more chunks than this is too common to pick candidates with.
COMMON_TERM_ROWS = 500
# Rank at most about this many candidate rows (half of what it was: on the
# python-docs set nDCG@10 did not move, and ranking is most of a search's time).
COMMON_SAMPLE_ROWS = 250


class PgLexicalStore:
    """The LexicalStore port over the ``lexical`` column of ``ragsage_chunks``.

    ``index`` writes nothing, and that is not a stub: the column is generated
    by the database from rows :class:`PgVectorStore` already wrote.

    A plain question matches chunks holding any of its terms.  Requiring every
    term, as ``websearch_to_tsquery`` does, would make most natural questions
    miss; ranking every chunk that holds any term makes a common word cost tens
    of milliseconds on a large corpus.  So candidates come from the query's
    *distinctive* terms only — those in at most ``common_term_rows`` chunks of
    the namespace, by the exact counts the writers keep (storage migration 29;
    a search only reads them), rarest first while their chunks stay within
    ``common_sample_rows`` — while every term still counts toward the rank.
    Nothing but the namespace's own rows feeds these counts or the weights
    below, so another tenant's documents never move a ranking.
    A query made only of common terms ranks the chunks holding all of them
    when there are enough, else the rarest term's; either way at most
    ``common_sample_rows`` chunks.  With ``weighted`` (the default)
    the rank is the sum over matched terms of ``ts_rank`` times the term's
    inverse document frequency, from those same counts, so a rare name outweighs
    a word such as "use"; otherwise it is plain ``ts_rank`` over all terms.
    A chunk holding the query's words in the query's order (a sentence copied
    from a page, a quoted message, a name of several words) has its rank
    doubled, and when every word of the query is common such chunks join the
    candidates of their own accord (storage migration 16).
    Both the column and the query also carry the parts of identifiers
    (``os.path.join`` → os, path, join; ``getLogger`` → get, logger).
    Text with search syntax (quotes, ``-word``, ``OR``) goes through
    ``websearch_to_tsquery`` unchanged, which never raises on bad input.

    The matching runs in the ``ragsage_keyword_search`` function (see migration
    4: under Row-Level Security no query could use the GIN index).  It reads
    only the caller's namespace and returns the ranked chunks' columns itself
    (migration 14), so one call is the whole search; since migration 19 its
    statements are planned once per database connection, not on every call.
    ``text_search_config`` names the configuration the column was built with.
    ``generation`` searches that live generation instead of the active one (an
    evaluation of a re-index before it switches); a retired or unknown one finds
    nothing.
    """

    def __init__(
        self,
        target: Database | AsyncSession,
        *,
        text_search_config: str,
        common_term_rows: int = COMMON_TERM_ROWS,
        common_sample_rows: int = COMMON_SAMPLE_ROWS,
        weighted: bool = True,
        generation: int | None = None,
    ) -> None:
        self._target = target
        self.generation = generation
        self._config = safe_identifier(text_search_config)
        self.common_term_rows, self.common_sample_rows = common_term_rows, common_sample_rows
        self.weighted = weighted

    async def index(self, scope: Scope, chunks: Sequence[Chunk]) -> None:
        return None

    async def search(
        self, scope: Scope, query: str, *, k: int, filters: SearchFilters | None = None
    ) -> Sequence[ScoredChunk]:
        rows = await self._ranked(scope, query, k, filters)
        return [
            ScoredChunk(
                chunk=chunk_from_row(row),
                score=float(row[CHUNK_COLUMN_COUNT]),
                keyword_score=float(row[CHUNK_COLUMN_COUNT]),
            )
            for row in rows
        ]

    async def rank_text(
        self,
        scope: Scope,
        query: str,
        *,
        k: int,
        filters: SearchFilters | None = None,
        rows: int = 0,
    ) -> Sequence[Ranked]:
        """:meth:`search`'s ranking by chunk id; the first ``rows`` carry their chunk."""
        found = await self._ranked(scope, query, k, filters, carried=max(0, rows))
        return [
            Ranked(
                chunk_id(str(row[0]), int(row[1])),
                float(row[CHUNK_COLUMN_COUNT]),
                chunk_from_row(row) if row[2] is not None else None,  # text is never null
            )
            for row in found
        ]

    async def _ranked(
        self,
        scope: Scope,
        query: str,
        k: int,
        filters: SearchFilters | None,
        *,
        carried: int | None = None,
    ) -> list[tuple[Any, ...]]:
        """The function's rows; with ``carried``, chunk columns past that many are null.

        Nulls are not sent, which is the point: only the likely winners' text
        crosses the wire and gets parsed.
        """
        if not query.strip() or k < 1:
            return []
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidRequest(
                f"the search text is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}"
            )
        syntax = bool(_SEARCH_SYNTAX.search(query))
        params = {
            "query": query,
            "syntax": syntax,
            "k": k,
            "common": self.common_term_rows,
            "sample": self.common_sample_rows,
            **filter_arguments(filters),
            "weighted": self.weighted,
            "generation": self.generation,
        }
        # Rows past ``carried`` come back without their chunk columns.
        params["carried"] = k if carried is None else carried
        sql = (
            "SELECT * FROM ragsage_keyword_search(:query, :syntax, "
            ":k, :common, :sample, CAST(:ids AS text[]), CAST(:sources AS text[]), "
            "CAST(:metadata AS jsonb), CAST(:after AS timestamptz), "
            "CAST(:before AS timestamptz), :weighted, CAST(:generation AS integer), :carried)"
        )
        return await read_rows(self._target, scope, [(to_driver_style(sql), params)])

    async def delete(self, scope: Scope, document_id: str) -> None:
        return None  # the rows belong to PgVectorStore, which deletes them
