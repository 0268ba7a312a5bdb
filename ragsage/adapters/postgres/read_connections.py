"""Autocommit connections kept apart from the session pool, for one-message reads."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import psycopg


class PoolTimeout(psycopg.OperationalError):
    """Every read connection stayed busy for the whole wait."""


class ReadConnections:
    """Idle psycopg connections in autocommit mode, handed out one read at a time.

    A read through the SQLAlchemy pool paid for its checkout, two autocommit
    switches and a rollback on return, each crossing greenlets: 0.4 ms of CPU
    for a read whose own work costs 0.1 ms (paired over 200 searches of real
    pages: hybrid p50 5.45 -> 5.02 ms, client CPU 2.73 -> 2.19 ms a search).
    These connections stay in autocommit, so a read is one message and nothing
    more.  ``psycopg_pool`` was the other candidate; with the server down its
    callers wait for the pool's timeout while it reconnects in the background,
    where a read here fails at once, so an outage is answered 503 promptly.

    At most ``limit`` connections are open at a time (a caller past that waits
    up to ``wait_seconds``, then gets :class:`PoolTimeout`); a connection goes
    back only if it is healthy and younger than ``recycle_seconds``.  The
    connections belong to the event loop that opened them: used from another
    loop, the set starts afresh.  Constructing this opens nothing.
    """

    def __init__(
        self,
        dsn: str,
        *,
        limit: int,
        connect_timeout: int,
        wait_seconds: float = 30.0,
        recycle_seconds: float = 1800.0,
    ) -> None:
        self._dsn = dsn.replace("postgresql+psycopg://", "postgresql://", 1)
        self.limit, self.wait_seconds = limit, wait_seconds
        self._connect_timeout, self._recycle = connect_timeout, recycle_seconds
        self._idle: list[tuple[psycopg.AsyncConnection[Any], float]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None

    def _bind(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:
            self._forget_idle()  # made on another loop: unusable from this one
            self._loop, self._slots = loop, asyncio.Semaphore(self.limit)
        return self._slots

    @asynccontextmanager
    async def connection(
        self, *, fresh: bool = False
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection for one read; ``fresh`` skips the idle ones (after one was found dead)."""
        slots = self._bind()
        try:
            async with asyncio.timeout(self.wait_seconds):
                await slots.acquire()
        except TimeoutError:
            raise PoolTimeout(
                f"all {self.limit} read connections stayed busy for {self.wait_seconds:g} s"
            ) from None
        try:
            if fresh:
                self._forget_idle()
            connection, opened = self._idle.pop() if self._idle else await self._open()
            try:
                yield connection
            finally:
                # A statement that failed leaves an autocommit connection idle
                # and reusable; a dead, busy or old one is closed.  The idle list
                # never outgrows the limit: a connection is opened only when it is empty.
                healthy = not (connection.closed or connection.broken) and _idle_now(connection)
                if healthy and time.monotonic() - opened <= self._recycle:
                    self._idle.append((connection, opened))
                else:
                    await _close_quietly(connection)
        finally:
            slots.release()

    async def _open(self) -> tuple[psycopg.AsyncConnection[Any], float]:
        """A new connection and when it was opened."""
        connection = await psycopg.AsyncConnection.connect(
            self._dsn,
            autocommit=True,
            # No server-side prepared statements, as for the session pool
            # (a transaction-mode PgBouncer in front would break them).
            prepare_threshold=None,
            connect_timeout=self._connect_timeout,
        )
        return connection, time.monotonic()

    def _forget_idle(self) -> None:
        idle, self._idle = self._idle, []
        for connection, _ in idle:
            # Synchronous on purpose: the loop that owns it may be gone.
            with suppress(Exception):
                connection.pgconn.finish()

    async def close(self) -> None:
        """Close every idle connection (those in use close when handed back)."""
        idle, self._idle = self._idle, []
        for connection, _ in idle:
            await _close_quietly(connection)


def _idle_now(connection: psycopg.AsyncConnection[Any]) -> bool:
    return connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


async def _close_quietly(connection: psycopg.AsyncConnection[Any]) -> None:
    try:
        with suppress(Exception):
            await connection.close()
    finally:
        # The close failed (another loop's connection) or was cancelled part-way (a
        # search dropped for its rate limit): end it here, so nothing is left open.
        if not connection.closed:
            with suppress(Exception):
                connection.pgconn.finish()
