"""The dense search path: which of three ways ranks a namespace's vectors, and its rows.

A search without filters calls the width's search function, whose plans the
connection keeps; a session bound to principals that read little of the
namespace ranks those few exactly (``ragsage_readable_nearest``); every other
search sends :func:`dense_statement`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
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
from ragsage.adapters.postgres.isolation import set_local, to_driver_style
from ragsage.adapters.postgres.rows import filter_arguments
from ragsage.adapters.postgres.sessions import read_rows, translate
from ragsage.core.errors import InvalidRequest
from ragsage.core.filters import SearchFilters
from ragsage.core.generations import EmbeddingModelMismatch, Generation
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database

# A ``choose`` statement's ``path`` column, as the path to remember.
_TAKEN: dict[str, DensePath] = {"walk": "walk", "own": "own", "exact": "exact"}


@dataclass(frozen=True, slots=True)
class DenseSearch:
    """A store's vectors as one search reads them: one generation of one model's vectors.

    ``generation`` None reads the namespace's active generation.  ``paths`` is
    the store's own memory of each namespace's path, which searches update.
    """

    target: Database | AsyncSession
    embedding_model: str
    embedding_dim: int
    generation: int | None
    ef_search: int | None
    paths: DensePaths

    async def nearest(
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
        if isinstance(self.target, AsyncSession) or self.embedding_dim in self.paths.unplanned:
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
            return await self.target.read(scope, [*self._tuning(path), (call, params)])
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
        rows = await read_rows(self.target, scope, [(call, params)])
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
        rows = await read_rows(self.target, scope, [*self._tuning(path), statement])
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
