"""Streaming replicas that answer reads, and which of them may answer one now.

A hot standby runs the same schema, roles and Row-Level Security as the
primary, so a read sent there is as isolated as on the primary; since storage
migration 29 a search only reads, so a standby can run it.  Only reads a caller
marks with :func:`replica_reads` go to a replica (the API marks its searches,
answers, and its reads of documents, jobs and chunks); writes and key checks
stay on the primary.

**A replica read never goes back in time.**  Before it reads, the replica must
have replayed everything the primary had flushed when the read began — every
commit acknowledged to anyone by then — waiting a short bound (``catch_up``)
for it, else the primary serves the read.  So a client reads its own upload at
once, a job it saw ``succeeded`` is never ``running`` again, and a changed
access list, a switched generation or a deleted document is never missed,
whichever replica answers.  The price is one small read of the primary's WAL
position and one of the replica's replay position per marked read.

A replica is in rotation while it answers and has replayed the primary's WAL
to within ``max_lag`` seconds: both are checked at most once a ``check_every``
seconds, on the request path.  A replica whose read fails for a connection
error, or that cannot catch up within ``catch_up``, is out until the next check
finds it well; the read is sent to the primary instead, so an outage of a
replica costs one failed attempt and never an error.  Which server answered
each read of a marked call is recorded (:class:`ReadLog`), for the API's
response header.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import psycopg

from ragsage.adapters.postgres.read_connections import PoolTimeout, ReadConnections

PRIMARY = "primary"


@dataclass(slots=True)
class ReadLog:
    """The servers that answered the reads of one marked call, in order, once each."""

    servers: list[str] = field(default_factory=list)

    def note(self, server: str) -> None:
        if server not in self.servers:
            self.servers.append(server)


_MARKED: ContextVar[ReadLog | None] = ContextVar("ragsage_replica_reads", default=None)


@contextmanager
def replica_reads(log: ReadLog | None = None) -> Iterator[ReadLog]:
    """Let the reads in this block go to a replica, and log who answered them (in ``log``)."""
    log = log if log is not None else ReadLog()
    token = _MARKED.set(log)
    try:
        yield log
    finally:
        _MARKED.reset(token)


def marked_reads() -> ReadLog | None:
    """The current block's log, or None when its reads belong on the primary."""
    return _MARKED.get()


@dataclass(slots=True)
class Replica:
    """One standby: its connections and what the last check found."""

    name: str
    connections: ReadConnections
    up: bool = False
    lag_seconds: float | None = None
    checked_at: float = float("-inf")
    error: str = ""


# A standby's recovery state and how far behind it is: no lag when it has
# replayed everything it received and received what the primary has written
# (compared by the caller), else the age of the last transaction it replayed.
_STANDBY_STATE = (
    "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text, "
    "extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8"
)
# Flushed, not merely written: a committed transaction is flushed, and a
# standby is only ever sent flushed WAL, so this is a position it can reach.
_PRIMARY_POSITION = "SELECT pg_current_wal_flush_lsn()::text"
_REPLAYED = "SELECT pg_last_wal_replay_lsn()::text"
# How often a read waiting for a replica to catch up asks it again.
_POLL_SECONDS = 0.002


def _lsn(text_: str | None) -> int:
    if not text_:
        return 0
    high, _, low = text_.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


async def _written(primary: ReadConnections) -> int | None:
    """How far the primary has written its WAL, or None when it does not answer."""
    try:
        async with primary.connection() as connection:
            row = await (await connection.execute(_PRIMARY_POSITION)).fetchone()
    except (psycopg.Error, PoolTimeout, OSError):
        return None
    return _lsn(row[0] if row else None)


class Replicas:
    """The configured standbys, checked now and then and used in turn."""

    def __init__(
        self,
        dsns: tuple[str, ...],
        *,
        limit: int,
        connect_timeout: int,
        max_lag: float,
        catch_up: float,
        check_every: float = 1.0,
    ) -> None:
        self.max_lag, self.catch_up, self.check_every = max_lag, catch_up, check_every
        self.replicas = [
            Replica(
                f"replica-{number}",
                ReadConnections(
                    dsn, limit=limit, connect_timeout=connect_timeout, wait_seconds=2.0
                ),
            )
            for number, dsn in enumerate(dsns, start=1)
        ]
        self._turn = itertools.count()
        self._checking: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __bool__(self) -> bool:
        return bool(self.replicas)

    async def choose(self, primary: ReadConnections) -> Replica | None:
        """A replica that has replayed all the primary had committed when asked; else None.

        Replicas in rotation are asked in turn how far they have replayed,
        every couple of milliseconds for at most ``catch_up`` seconds; the first
        one past the primary's position serves the read, which therefore sees
        every commit acknowledged before it began: the caller's own upload, the
        job states it saw before, an access list changed a moment ago.  None
        (the primary serves) when no replica is in rotation, the primary cannot
        say where it is, or none catches up in time; those that did not are out
        of rotation until the next check, so a stuck replica costs one read per
        check interval its wait, not every read.
        """
        await self._check_if_due(primary)
        ready = [r for r in self.replicas if r.up]
        if not ready:
            return None
        position = await _written(primary)
        if position is None:
            return None  # the primary is down: it cannot serve the read either
        first = next(self._turn) % len(ready)
        waiting = ready[first:] + ready[:first]
        deadline = time.monotonic() + self.catch_up
        while waiting:
            for replica in list(waiting):
                replayed = await self._replayed(replica)
                if replayed is None:
                    waiting.remove(replica)  # out of rotation: it did not answer
                elif replayed >= position:
                    return replica
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(_POLL_SECONDS)
        for replica in waiting:
            replica.up, replica.error = False, "did not replay a recent commit in time"
            replica.checked_at = time.monotonic()
        return None

    async def _replayed(self, replica: Replica) -> int | None:
        """How far ``replica`` has replayed; None (and out of rotation) when it fails."""
        try:
            async with replica.connections.connection() as connection:
                row = await (await connection.execute(_REPLAYED)).fetchone()
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            self.failed(replica, exc)
            return None
        return _lsn(row[0] if row else None)

    def failed(self, replica: Replica, error: BaseException) -> None:
        """Take ``replica`` out of rotation until a check finds it well again."""
        replica.up, replica.error = False, type(error).__name__

    async def _check_if_due(self, primary: ReadConnections) -> None:
        now = time.monotonic()
        if all(now - r.checked_at < self.check_every for r in self.replicas):
            return
        loop = asyncio.get_running_loop()
        if self._checking is None or self._loop is not loop:
            self._loop, self._checking = loop, asyncio.Lock()
        if self._checking.locked():
            return  # another read is checking; this one uses what is known
        async with self._checking:
            await self.check(primary)

    async def check(self, primary: ReadConnections) -> None:
        """Ask the primary how far it has written and each replica how far it has replayed."""
        position = await _written(primary)  # None: judge the replicas by age alone
        for replica in self.replicas:
            await self._check_one(replica, position)

    async def _check_one(self, replica: Replica, position: int | None) -> None:
        replica.checked_at = time.monotonic()
        try:
            async with replica.connections.connection() as connection:
                row: Any = await (await connection.execute(_STANDBY_STATE)).fetchone()
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            replica.up, replica.lag_seconds, replica.error = False, None, type(exc).__name__
            return
        in_recovery, replayed, age = row
        if not in_recovery:
            # Promoted, or pointed at a primary by mistake: not a replica of ours.
            replica.up, replica.lag_seconds, replica.error = False, None, "not in recovery"
            return
        caught_up = position is not None and _lsn(replayed) >= position
        lag = 0.0 if caught_up else float(age) if age is not None else float("inf")
        replica.lag_seconds = lag
        replica.up = lag <= self.max_lag
        replica.error = "" if replica.up else f"{lag:.1f} s behind"

    def states(self) -> list[dict[str, Any]]:
        """Each replica's name, whether it is in rotation, its lag and why it is out."""
        return [
            {"name": r.name, "up": r.up, "lag_seconds": r.lag_seconds, "error": r.error}
            for r in self.replicas
        ]

    async def close(self) -> None:
        for replica in self.replicas:
            await replica.connections.close()
