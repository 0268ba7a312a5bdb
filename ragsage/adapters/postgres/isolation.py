"""How a transaction is pinned to one namespace before any store touches it."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from ragsage.adapters.postgres.config import PostgresConfig, safe_identifier
from ragsage.adapters.postgres.read_connections import ReadConnections
from ragsage.core.scopes import Scope

SCOPE_KEY = "ragsage.scope"

_log = logging.getLogger(__name__)
_NAMED = re.compile(r"(?<![:\w]):(\w+)")


@dataclass(frozen=True, slots=True)
class Statement:
    """One SQL statement and its bound parameters, inspectable without a database."""

    sql: str
    parameters: Mapping[str, str] = field(default_factory=dict)


def isolation_preamble(
    config: PostgresConfig, scope: Scope | None, timeout_ms: int | None = None
) -> tuple[Statement, ...]:
    """The statements that pin a transaction to ``scope`` under Row-Level Security.

    Every setting is transaction-local (``SET LOCAL``), so nothing survives into
    the next transaction on the same pooled connection, and all of them travel
    in one message.  They are ``SET LOCAL`` commands, not ``set_config(...,
    true)`` calls, because a distributed Postgres (Citus) forwards only those
    commands to the nodes that hold a tenant's rows, where its policies read
    them (docs/scaling.md).  A command takes no bound parameters, so the values
    are written as literals: each one is checked first (the namespace and the
    principals by the patterns :class:`Scope` enforces, the role as an
    identifier, the rest are numbers and constants), and :func:`set_local`
    refuses anything it could not quote plainly.
    """
    settings = {
        # An empty namespace matches no row: the system session sees nothing directly.
        config.isolation_variable: scope.namespace if scope is not None else "",
        config.principals_variable: principals_setting(scope),
        "statement_timeout": str(int(timeout_ms or config.statement_timeout_ms)),
        # Filtered vector search keeps walking the HNSW graph until enough rows
        # pass the filters (pgvector >= 0.8), instead of returning too few.
        "hnsw.iterative_scan": "relaxed_order",
        "hnsw.ef_search": str(int(config.ef_search)),
        # Scoped statements are short.  A parallel plan for the exact branch of
        # dense search, which a one-time filter almost always skips, still
        # started its two workers: 17 of a 30 ms search at 100,000 chunks.
        "max_parallel_workers_per_gather": "0",
    }
    commands = [set_local(name, value) for name, value in settings.items()]
    if not config.uses_app_login:
        commands.insert(0, f'SET LOCAL ROLE "{safe_identifier(config.app_role)}"')
    return (Statement("; ".join(commands)),)


# What a setting's value may hold: every character the namespace and principal
# patterns allow, and the digits and words of the other settings.  No quote, no
# backslash, no percent sign (which a driver would read as a placeholder).
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.:@+/=#,*-]*")
# A server setting (``statement_timeout``) or a custom one (``ragsage.namespace``).
_SETTING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")


def set_local(name: str, value: str) -> str:
    """``SET LOCAL name = 'value'``, the setting named by a checked name, its value plain."""
    if not _SETTING_NAME.fullmatch(name):
        raise ValueError(f"not a setting's name: {name!r}")
    if not _PLAIN_VALUE.fullmatch(value):
        raise ValueError(f"a session setting's value holds a character it may not: {value!r}")
    return f"SET LOCAL {name} = '{value}'"


UNBOUND = "*"


def principals_setting(scope: Scope | None) -> str:
    """What a session's principals setting holds: ``*`` when bound to none, else the names.

    Empty (the system session, or a transaction nobody pinned) admits only
    documents open to the whole namespace, and the namespace setting beside it
    admits nothing: a forgotten preamble fails closed.
    """
    if scope is None:
        return ""
    if scope.principals is None:
        return UNBOUND
    return ",".join(sorted(scope.principals))


def pinned_as(scope: Scope | None) -> tuple[str, frozenset[str] | None] | None:
    """What a session records of the scope it was pinned to (see sessions.scoped)."""
    return None if scope is None else (scope.namespace, scope.principals)


@asynccontextmanager
async def open_scoped_session(
    sessionmaker: async_sessionmaker[AsyncSession], config: PostgresConfig, scope: Scope | None
) -> AsyncIterator[AsyncSession]:
    """A session in one transaction pinned to ``scope``: committed on success.

    The scope is recorded on the session so a store handed this session can
    refuse to act for a different namespace.
    """
    async with sessionmaker() as session:
        await _pin_fresh(session, config, scope)  # begins the transaction
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        await session.commit()


async def _pin_fresh(session: AsyncSession, config: PostgresConfig, scope: Scope | None) -> None:
    """Pin the transaction, on a fresh connection if the pooled one had died.

    The pool does not ping a connection before handing it out (a round trip on
    every transaction); a connection the server dropped while idle fails on
    this first statement instead, before anything was done, so it is replaced
    and the statement sent once more.
    """
    try:
        await _pin(session, config, scope)
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        _log.info("a pooled database connection had closed; using a new one")
        await session.rollback()  # lets the session go; the next statement connects afresh
        await _pin(session, config, scope)


async def _pin(session: AsyncSession, config: PostgresConfig, scope: Scope | None) -> None:
    connection = await session.connection()
    for statement in isolation_preamble(config, scope):
        # Sent as written: a principal may hold ``=:x``, which ``text()`` would
        # take for a bound parameter.
        await connection.exec_driver_sql(statement.sql)
    session.info[SCOPE_KEY] = pinned_as(scope)


@functools.lru_cache(maxsize=256)
def to_driver_style(sql: str) -> str:
    """``:name`` parameters (SQLAlchemy's ``text``) as ``%(name)s`` (psycopg's).

    Cached: a search converts the same few statement texts on every call.
    """
    return _NAMED.sub(r"%(\1)s", sql.replace("%", "%%"))


Statements = Sequence[tuple[str, Mapping[str, Any]]]


async def read_in_one_message(
    connections: ReadConnections,
    config: PostgresConfig,
    scope: Scope | None,
    statements: Statements,
    timeout_ms: int | None = None,
) -> list[tuple[Any, ...]]:
    """The rows of the last of ``statements``, run in one message pinned to ``scope``.

    ``timeout_ms`` replaces the configured statement timeout for this read.

    The isolation preamble and the statements go out as a single simple-query
    message on an autocommit connection: the server runs the statements of one
    such message as a single implicit transaction, so the preamble's
    transaction-local settings hold for every statement and vanish after the
    last, and a failing statement undoes the whole message.  Values are bound
    by psycopg's client-side binding (``ClientCursor.mogrify``, which quotes
    them with libpq's escaping for this connection), never spliced in by us.
    One message is one round trip, one parse and no Sync: a read costs about a
    quarter of the CPU that the same statements sent in pipeline mode through
    the session pool did (bench/RESULTS.md, "Fifth pass").  A connection found
    dead is replaced, with every idle one, and the whole read sent once more on
    a new connection (it has written nothing).
    """
    # It binds nothing: sent as written, ahead of the mogrified statements.
    (preamble,) = isolation_preamble(config, scope, timeout_ms)
    for attempt in (0, 1):
        async with connections.connection(fresh=attempt > 0) as connection:
            cursor = psycopg.AsyncClientCursor(connection)
            try:
                message = "; ".join(
                    [
                        preamble.sql,
                        *(cursor.mogrify(text_, params) for text_, params in statements),
                    ]
                )
                await cursor.execute(message)
                while cursor.nextset():
                    pass  # on to the last statement's result
                # The result's status, not ``description``, which builds a Column
                # object per column on every call.
                result = cursor.pgresult
                if result is None or result.status != psycopg.pq.ExecStatus.TUPLES_OK:
                    return []
                return await cursor.fetchall()
            except psycopg.OperationalError:
                if attempt or not connection.closed:
                    raise
                _log.info("a pooled database connection had closed; using a new one")
    raise AssertionError("unreachable: the second attempt returns or raises")
