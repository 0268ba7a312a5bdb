"""How a store gets a session: one it was handed, or a fresh scoped one per call."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncSession

from ragsage.adapters.postgres.isolation import SCOPE_KEY, Statements, pinned_as
from ragsage.core.errors import (
    InvalidRequest,
    RagsageError,
    StorageError,
    StorageTimeout,
    StorageUnavailable,
    causes,
)
from ragsage.core.scopes import Scope

if TYPE_CHECKING:
    from ragsage.adapters.postgres.database import Database

_log = logging.getLogger(__name__)


# What a database that is down or out of reach raises, wrapped by SQLAlchemy or not.
_DATABASE_DOWN = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout)


def translate(exc: SQLAlchemyError | psycopg.Error) -> RagsageError:
    """A short, internals-free error for ``exc``; the full one goes to the log only."""
    _log.warning("database error: %s", exc)
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return _connection_lost()
    origin = type(getattr(exc, "orig", None) or exc).__name__
    # SQLAlchemy's pool timeout is named TimeoutError and carries no driver error:
    # a pool that stayed full is an outage to retry, not a rejected operation.
    if isinstance(exc, PoolTimeout) or origin in {
        "OperationalError",
        "InterfaceError",
        "ConnectionTimeout",
    }:
        return _unavailable(origin)
    if origin == "DataError" or isinstance(getattr(exc, "orig", exc), psycopg.DataError):
        return InvalidRequest("a value in the request cannot be stored or searched")
    if origin == "QueryCanceled":
        return _cancelled()
    return StorageError(f"the database rejected the operation ({origin})")


# The three outages, said alike whichever of the functions here finds them.
def _connection_lost() -> StorageUnavailable:
    return StorageUnavailable("the database connection was lost")


def _unavailable(origin: str) -> StorageUnavailable:
    return StorageUnavailable(f"the database is unavailable ({origin})")


def _cancelled() -> StorageTimeout:
    return StorageTimeout("the database query took too long and was cancelled")


def database_failure(exc: BaseException) -> RagsageError | None:
    """The error tree's word for a database failure in ``exc`` or its causes; None if none.

    Drivers raise their own types, often wrapped (SQLAlchemy wraps psycopg), so
    an outage is looked for along the whole chain of causes; any other driver
    error is translated only when it is ``exc`` itself.  This is what lets the
    API's one error handler answer without importing a driver.
    """
    for cause in causes(exc):
        if isinstance(cause, psycopg.errors.QueryCanceled):
            # A statement timeout, which psycopg files under operational errors.
            return _cancelled()
        if isinstance(cause, DBAPIError) and cause.connection_invalidated:
            return _connection_lost()
        if isinstance(cause, _DATABASE_DOWN):
            return _unavailable(type(cause).__name__)
    if isinstance(exc, SQLAlchemyError | psycopg.Error):
        return translate(exc)
    return None


def _check_pinned(session: AsyncSession, scope: Scope) -> None:
    pinned = session.info.get(SCOPE_KEY)
    if pinned == pinned_as(scope):
        return
    held = pinned[0] if pinned else None
    if held != scope.namespace:
        raise StorageError(
            f"a session scoped to {held!r} cannot serve namespace {scope.namespace!r}"
        )
    raise StorageError(f"a session read for other principals cannot serve {scope.namespace!r}")


def namespace_of(session: AsyncSession) -> str:
    """The namespace ``session`` was pinned to (see :func:`scoped`).

    Statements on tenant tables name it as well as relying on Row-Level
    Security, so a distributed Postgres can route each to the tenant's shard
    (docs/scaling.md).  A session pinned to no namespace reads no tenant row,
    so asking it for one is a mistake, reported as such.
    """
    pinned = session.info.get(SCOPE_KEY)
    if not pinned:
        raise StorageError("a session pinned to no namespace cannot read a namespace's rows")
    return str(pinned[0])


@asynccontextmanager
async def scoped(target: Database | AsyncSession, scope: Scope) -> AsyncIterator[AsyncSession]:
    """A session for ``scope``, with database errors translated into :class:`StorageError`.

    A store bound to a session (to share one transaction with other writes)
    uses it, after checking that it was opened for the same namespace; a store
    bound to a :class:`Database` opens a short transaction per call, which is
    what lets dense and lexical search run in parallel on separate connections.
    """
    try:
        if isinstance(target, AsyncSession):
            _check_pinned(target, scope)
            yield target
            return
        async with target.session(scope) as session:
            yield session
    except (SQLAlchemyError, psycopg.Error) as exc:
        raise translate(exc) from exc


async def read_rows(
    target: Database | AsyncSession, scope: Scope, statements: Statements
) -> list[tuple[Any, ...]]:
    """The rows of the last of ``statements`` (psycopg style), errors translated.

    Through a store's own session they run in its transaction; through a
    :class:`Database` they travel in one message, one round trip.
    """
    try:
        if isinstance(target, AsyncSession):
            _check_pinned(target, scope)
            raw = await (await target.connection()).get_raw_connection()
            connection: psycopg.AsyncConnection[Any] = raw.driver_connection  # type: ignore[assignment]
            rows: list[tuple[Any, ...]] = []
            for sql, params in statements:
                cursor = await connection.execute(sql, params)
                rows = await cursor.fetchall() if cursor.description else []
            return rows
        return await target.read(scope, statements)
    except (SQLAlchemyError, psycopg.Error) as exc:
        raise translate(exc) from exc


@dataclass(frozen=True, slots=True)
class ScopedReads:
    """A scope's reads of ``database`` outside any transaction of the caller's.

    Each is one message (:meth:`Database.read`): one round trip where a session
    takes three, and inside :func:`~ragsage.adapters.postgres.replicas.replica_reads`
    a replica may answer it.  The document and job readers take one in place
    of a session.
    """

    database: Database
    scope: Scope


def reads_namespace(source: AsyncSession | ScopedReads) -> str:
    """The namespace a reader reads: the session's pin, or the reads' scope."""
    if isinstance(source, ScopedReads):
        return source.scope.namespace
    return namespace_of(source)


async def read_from(
    source: AsyncSession | ScopedReads, sql: str, params: Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    """The rows of one read (psycopg-style parameters) in a session or on its own."""
    if isinstance(source, ScopedReads):
        return await read_rows(source.database, source.scope, [(sql, dict(params))])
    result = await (await source.connection()).exec_driver_sql(sql, dict(params))
    return [tuple(row) for row in result]
