"""The connection pools and the only ways in: scoped sessions and owner connections."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
)
from sqlalchemy.ext.asyncio import (
    create_async_engine as _create_async_engine,
)

from ragsage.adapters.postgres.config import PostgresConfig, async_url
from ragsage.adapters.postgres.dense_function import dense_function_statements
from ragsage.adapters.postgres.isolation import (
    Statements,
    open_scoped_session,
    read_in_one_message,
)
from ragsage.adapters.postgres.migrations import (
    hnsw_index_statement,
    migrate,
    width_index_name,
    width_indexes,
)
from ragsage.adapters.postgres.read_connections import PoolTimeout, ReadConnections
from ragsage.adapters.postgres.replicas import PRIMARY, Replicas, marked_reads, must_replay
from ragsage.core.errors import ConfigurationError
from ragsage.core.scopes import Scope

_log = logging.getLogger(__name__)
CONNECT_TIMEOUT_SECONDS = 10
# A replica that does not answer is skipped for the primary: wait for it briefly.
REPLICA_CONNECT_TIMEOUT_SECONDS = 2


def create_engine(config: PostgresConfig, *, owner: bool = False) -> AsyncEngine:
    """The pooled async engine for scoped work (``owner=True``: for migrations)."""
    dsn = config.dsn if owner else config.scoped_dsn
    return _create_async_engine(
        async_url(dsn),
        pool_size=1 if owner else config.pool_size,
        max_overflow=1 if owner else config.max_overflow,
        pool_pre_ping=config.pool_pre_ping,
        # Pooled connections must not outlive a server-side idle timeout or a failover.
        pool_recycle=1800,
        # No server-side prepared statements: they break behind a transaction-mode
        # pooler (PgBouncer), and a cached generic plan can ignore the HNSW index.
        # A server that cannot be reached fails a request in seconds, not at the
        # request deadline: a black-holed address otherwise waits on TCP for minutes.
        connect_args={"prepare_threshold": None, "connect_timeout": CONNECT_TIMEOUT_SECONDS},
    )


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions whose objects stay readable after the scoped block commits."""
    return async_sessionmaker(engine, expire_on_commit=False)


class Database:
    """ragsage's pools against one database.

    Scoped work uses the app engine (the app login role, or the owner with a
    role switch when no app DSN is configured); migrations use a separate,
    one-connection owner engine.  Constructing this opens no connection.
    """

    def __init__(
        self,
        config: PostgresConfig,
        engine: AsyncEngine | None = None,
        owner_engine: AsyncEngine | None = None,
    ) -> None:
        self._config = config
        # Per-namespace statement timeouts (ms) for one-message reads, which is how
        # searches read: set by the process serving them from the operator's
        # overrides (see api.costs).  Absent: the configured timeout.
        self.read_timeouts: dict[str, int] = {}
        self._engine = engine or create_engine(config)
        self._owner_engine: AsyncEngine | None
        if owner_engine is not None:
            self._owner_engine = owner_engine
        elif not config.has_owner:
            self._owner_engine = None  # an app-role-only service: no DDL from here
        elif config.uses_app_login:
            self._owner_engine = create_engine(config, owner=True)
        else:
            self._owner_engine = self._engine
        self._sessions = create_sessionmaker(self._engine)
        self._reads = ReadConnections(
            config.scoped_dsn,
            limit=config.pool_size + config.max_overflow,
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
        )
        self.replicas = Replicas(
            config.replica_dsns,
            limit=config.pool_size + config.max_overflow,
            connect_timeout=REPLICA_CONNECT_TIMEOUT_SECONDS,
            max_lag=config.replica_max_lag,
        )

    @property
    def config(self) -> PostgresConfig:
        return self._config

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    def session(self, scope: Scope) -> AbstractAsyncContextManager[AsyncSession]:
        """One transaction pinned to ``scope`` with Row-Level Security enforced.

        With replicas, a transaction marked with :func:`replicas_must_replay`
        returns only once they have replayed it (bounded; see :class:`Replicas`);
        without, nothing wraps the transaction.
        """
        opened = open_scoped_session(self._sessions, self._config, scope)
        return self._replayed(opened) if self.replicas else opened

    @asynccontextmanager
    async def _replayed(
        self, opened: AbstractAsyncContextManager[AsyncSession]
    ) -> AsyncIterator[AsyncSession]:
        async with opened as session:
            yield session
        if must_replay(session):
            late = await self.replicas.wait_for(self._reads)
            if late:
                _log.warning("replicas out of rotation until they catch up: %s", late)

    async def read(self, scope: Scope | None, statements: Statements) -> list[tuple[Any, ...]]:
        """The rows of the last statement, all sent in one message pinned to ``scope``.

        Searches read this way; a namespace in :attr:`read_timeouts` gets its own
        statement timeout for them.  Inside :func:`replica_reads` a replica in
        rotation answers, when there is one.
        """
        timeout = self.read_timeouts.get(scope.namespace) if scope is not None else None
        log = marked_reads()
        if log is not None and self.replicas:
            replica = await self.replicas.choose(self._reads)
            if replica is not None:
                try:
                    rows = await read_in_one_message(
                        replica.connections, self._config, scope, statements, timeout
                    )
                except psycopg.errors.QueryCanceled:
                    raise  # the read's own timeout: the primary would take as long
                except (psycopg.OperationalError, PoolTimeout, OSError) as exc:
                    # Down, or a read cancelled by a conflict with recovery: the
                    # primary answers instead, and the replica waits for a check.
                    # A serialization failure (40001) is a read cancelled to replay
                    # WAL: the replica is well.  A read-only autocommit statement
                    # meets no other one.
                    if not isinstance(exc, psycopg.errors.SerializationFailure):
                        self.replicas.failed(replica, exc)
                    _log.warning("replica %s failed a read: %s", replica.name, type(exc).__name__)
                else:
                    log.note(replica.name)
                    return rows
        rows = await read_in_one_message(self._reads, self._config, scope, statements, timeout)
        if log is not None:
            log.note(PRIMARY)
        return rows

    async def check_replicas(self) -> list[dict[str, Any]]:
        """Check every replica now; each one's name, rotation, lag and why it is out."""
        if self.replicas:
            await self.replicas.check(self._reads)
        return self.replicas.states()

    async def write_at_once(
        self, scope: Scope | None, statements: Statements
    ) -> list[tuple[Any, ...]]:
        """An idempotent write sent as :meth:`read` sends a read: one message, one transaction.

        The server commits the message as soon as it has run it, whatever the
        client does next: a process frozen right after sending it (a C call
        holding the GIL) cannot keep its row locks.  The message may be sent a
        second time after a dead connection, so only a write that is the same
        done twice belongs here (a lease renewal).
        """
        return await read_in_one_message(self._reads, self._config, scope, statements)

    async def refresh_statistics(self) -> bool:
        """Analyze the chunk table if it has no planner statistics or has doubled since.

        Writers call this after they commit (storage migration 15 says why);
        True when it ran ``ANALYZE``.  A failure is logged and reported as
        False: stale statistics make searches slower, never wrong.
        """
        return await self._refresh("ragsage_refresh_chunk_statistics", "chunk")

    async def refresh_job_statistics(self) -> bool:
        """Analyze the job table if it has no planner statistics or has doubled since.

        Uploads call this after they commit (``sql/functions/refresh_job_statistics.sql``
        says why choosing a turn needs it); as :meth:`refresh_statistics`.
        """
        return await self._refresh("ragsage_refresh_job_statistics", "job")

    async def _refresh(self, function: str, table: str) -> bool:
        try:
            rows = await self.read(None, [(f"SELECT {function}()", {})])
        except (SQLAlchemyError, psycopg.Error) as exc:
            _log.warning("could not refresh the %s table's statistics: %s", table, exc)
            return False
        return bool(rows and rows[0][0])

    def system_session(self) -> AbstractAsyncContextManager[AsyncSession]:
        """A scoped-role transaction pinned to no namespace: it sees no tenant row.

        Work that must cross namespaces (the job watchdog, metrics) calls the
        named ``ragsage_*`` security-definer functions from here; those are the
        only doors, and each is tested not to leak.
        """
        return open_scoped_session(self._sessions, self._config, None)

    def _owner(self) -> AsyncEngine:
        if self._owner_engine is None:
            raise ConfigurationError(
                "this needs the owner's database URL (RAGSAGE_DATABASE_URL); this process "
                "was given only the app role's, as a service should be: run `ragsage migrate`"
            )
        return self._owner_engine

    @asynccontextmanager
    async def owner_connection(self) -> AsyncIterator[AsyncConnection]:
        """An owner transaction for DDL and the operator's per-namespace settings.

        It is not bound to a namespace: a row written here must pin one first
        (as :mod:`ragsage.adapters.postgres.namespaces` does).
        """
        async with self._owner().begin() as connection:
            yield connection

    @asynccontextmanager
    async def owner_autocommit(self) -> AsyncIterator[AsyncConnection]:
        """One owner connection outside any transaction, for ``CONCURRENTLY`` builds.

        Every statement commits on its own, and the connection is the same one
        throughout, so a session advisory lock taken on it holds until the end.
        """
        async with self._owner().connect() as connection:
            yield await connection.execution_options(isolation_level="AUTOCOMMIT")

    async def migrate(self, *, to_version: int | None = None) -> int:
        """Bring the schema up to date and index every configured width; safe on every start.

        Each width also gets its dense search function
        (:mod:`ragsage.adapters.postgres.dense_function`), made again every time.

        A width's index on an empty chunk table is made in the migration's own
        transaction; on a table holding vectors it is built ``CONCURRENTLY``
        afterwards, so ingestion and search go on while it builds.  A build
        that failed earlier left an invalid index, which is dropped and rebuilt.
        """
        async with self.owner_connection() as connection:
            version = await migrate(connection, self._config, to_version=to_version)
            if to_version is not None:
                return version  # an intermediate schema, as the upgrade tests build it
            for width in self._config.widths:
                for statement in dense_function_statements(self._config, width):
                    await connection.execute(text(statement))
            found = await width_indexes(connection, self._config.hnsw_type)
            missing = [w for w in self._config.widths if not found.get(w, False)]
            empty = not await connection.scalar(
                text("SELECT pg_relation_size('ragsage_chunks') > 0")
            )
            if empty:
                for width in missing:
                    await connection.execute(
                        text(f"DROP INDEX IF EXISTS {width_index_name(width)}")
                    )
                    await connection.execute(text(hnsw_index_statement(self._config, width)))
                missing = []
        for width in missing:
            await self._build_width_index(width, rebuild=width in found)
        return version

    async def _build_width_index(self, width: int, *, rebuild: bool) -> None:
        _log.info("building the HNSW index for %d-dimensional vectors (concurrently)", width)
        async with self.owner_autocommit() as autocommit:
            if rebuild:
                await autocommit.execute(
                    text(f"DROP INDEX CONCURRENTLY IF EXISTS {width_index_name(width)}")
                )
            await autocommit.execute(
                text(hnsw_index_statement(self._config, width, concurrently=True))
            )

    async def ping(self) -> bool:
        """True when a round trip to the database succeeds; any failure is False.

        A health check reports a database it cannot reach as degraded instead of
        raising, whatever the driver, the pool or the network threw.
        """
        try:
            async with self._engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except Exception as exc:  # noqa: BLE001 - every failure means "not reachable"
            _log.warning("database ping failed: %s", type(exc).__name__)
            return False
        return True

    async def dispose(self) -> None:
        """Close every pooled connection."""
        await self._reads.close()
        await self.replicas.close()
        await self._engine.dispose()
        if self._owner_engine is not None and self._owner_engine is not self._engine:
            await self._owner_engine.dispose()
