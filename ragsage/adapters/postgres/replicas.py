"""Streaming replicas that answer searches, and which of them may answer one now.

A hot standby runs the same schema, roles and Row-Level Security as the
primary, so a search sent there is as isolated as on the primary; since
storage migration 29 a search only reads, so a standby can run it.  Only reads
a caller marks with :func:`replica_reads` go to a replica (the API marks its
searches, answers, chunk reads and source lists; the library its searches);
writes, key checks, and the job and document reads a client makes after an
upload stay on the primary, so a client reads its own writes and a job never
goes back in time.

**Staleness is bounded, and some changes are never missed.**  A replica is in
rotation while it answers, replays, and was last seen holding everything the
primary had flushed at most ``max_lag`` seconds ago (checked at most once a
``check_every`` seconds, on the request path).  A change a search must not
miss — an access list, the searched generation, a deleted document, a
library write its caller will search for next — is marked with
:func:`replicas_must_replay`: the transaction returns only once every replica
in rotation has replayed it, and one that cannot in time leaves rotation first.

Why a read does not simply wait for the primary's current position: a flush
position that falls on a WAL page boundary may cut a record in two, whose rest
stays in the primary's buffers until its WAL writer wakes (up to seconds when
idle).  Searches that set hint bits on freshly written rows write such records
all the time, so a replica would seem behind while holding every commit.  A
position that is not on a page boundary ends a record, and the primary's
position right after a commit is that commit's end: those are what the checks
and the waits compare with.

A replica whose read fails for a connection error is out until a check finds
it well; the read goes to the primary, so an outage of a replica costs one
failed attempt and never an error.  Which server answered each read of a
marked call is recorded (:class:`ReadLog`), for the API's response header.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import psycopg

from ragsage.adapters.postgres.read_connections import PoolTimeout, ReadConnections
from ragsage.core.replicas import ReadLog

PRIMARY = "primary"
# Postgres's WAL page size (XLOG_BLCKSZ), fixed when the server was built.
WAL_PAGE_BYTES = 8192
# How long a check waits for a replica to replay the primary's position, and
# how often it asks meanwhile.
_CHECK_PATIENCE_SECONDS = 0.05
_POLL_SECONDS = 0.002


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


# Set on a session whose transaction changes what a search may see.
_REPLAY = "ragsage_replicas_must_replay"


def replicas_must_replay(session: Any) -> None:
    """Mark ``session``: once it commits, wait for the replicas to replay it.

    A search on a replica must not miss a change to who may read a document,
    to which generation a namespace searches, or a deletion, once the request
    that made it has returned.  :meth:`Database.session` sees the mark and,
    after the commit, waits (a bounded time) until every replica in rotation
    has replayed it; one that has not by then is taken out of rotation.
    """
    session.info[_REPLAY] = True


def must_replay(session: Any) -> bool:
    return bool(session.info.get(_REPLAY))


@dataclass(slots=True)
class Replica:
    """One standby: its connections and what the last check found."""

    name: str
    connections: ReadConnections
    up: bool = False
    lag_seconds: float | None = None
    checked_at: float = float("-inf")
    error: str = ""
    # When the replica was last seen holding everything the primary had flushed
    # (monotonic time at which the primary was asked its position).
    fresh_at: float = float("-inf")


@dataclass(frozen=True, slots=True)
class Position:
    """How far the primary has flushed its WAL, and whether that point ends a record."""

    flushed: int
    ends_record: bool


def _lsn(text_: str | None) -> int:
    if not text_:
        return 0
    high, _, low = text_.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


# Everything inserted is flushed, or the flush point is off a page boundary:
# either way it is the end of a record a standby can replay up to.
_PRIMARY_POSITION = (
    "SELECT pg_current_wal_flush_lsn()::text, "
    "pg_current_wal_insert_lsn() = pg_current_wal_flush_lsn()"
)
# A standby's state: in recovery, replay paused, how far replayed and received.
_STANDBY_STATE = (
    "SELECT pg_is_in_recovery(), pg_is_in_recovery() AND pg_is_wal_replay_paused(), "
    "pg_last_wal_replay_lsn()::text, pg_last_wal_receive_lsn()::text"
)
_REPLAYED = "SELECT pg_last_wal_replay_lsn()::text"


async def _position(primary: ReadConnections) -> Position | None:
    """The primary's flush position, or None when it does not answer."""
    try:
        async with primary.connection() as connection:
            row = await (await connection.execute(_PRIMARY_POSITION)).fetchone()
    except (psycopg.Error, PoolTimeout, OSError):
        return None
    if row is None:
        return None
    flushed = _lsn(row[0])
    return Position(flushed, bool(row[1]) or flushed % WAL_PAGE_BYTES != 0)


class Replicas:
    """The configured standbys, checked now and then and used in turn."""

    def __init__(
        self,
        dsns: tuple[str, ...],
        *,
        limit: int,
        connect_timeout: int,
        max_lag: float,
        check_every: float = 1.0,
    ) -> None:
        self.max_lag, self.check_every = max_lag, check_every
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
        """A replica in rotation, taken in turn; None when none is (read the primary)."""
        await self._check_if_due(primary)
        ready = [r for r in self.replicas if r.up]
        if not ready:
            return None
        return ready[next(self._turn) % len(ready)]

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
        """Find which replicas answer and replay, and how stale each may be.

        A replica's lag is the time since it was last seen holding everything
        the primary had flushed: zero when it replays the primary's position
        now (within a short wait), which bounds how old its data can be
        whatever the primary is doing.  When that position may cut a record
        (see the module's notes), having received it is enough.
        """
        asked_at = time.monotonic()
        position = await _position(primary)
        for replica in self.replicas:
            await self._check_one(replica, position, asked_at)

    async def _check_one(
        self, replica: Replica, position: Position | None, asked_at: float
    ) -> None:
        deadline = time.monotonic() + _CHECK_PATIENCE_SECONDS
        try:
            async with replica.connections.connection() as connection:
                row: Any = await (await connection.execute(_STANDBY_STATE)).fetchone()
                in_recovery, paused = row[0], row[1]
                replayed, received = _lsn(row[2]), _lsn(row[3])
                while (
                    in_recovery
                    and position is not None
                    and position.ends_record
                    and replayed < position.flushed
                    and time.monotonic() < deadline
                ):
                    await asyncio.sleep(_POLL_SECONDS)
                    got = await (await connection.execute(_REPLAYED)).fetchone()
                    replayed = _lsn(got[0] if got else None)
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            replica.up, replica.lag_seconds, replica.error = False, None, type(exc).__name__
            replica.checked_at = time.monotonic()
            return
        replica.checked_at = time.monotonic()
        if not in_recovery:
            # Promoted, or pointed at a primary by mistake: not a replica of ours.
            replica.up, replica.lag_seconds, replica.error = False, None, "not in recovery"
            return
        if position is not None and not paused:
            reached = replayed if position.ends_record else received
            if reached >= position.flushed:
                replica.fresh_at = asked_at
        lag = replica.checked_at - replica.fresh_at
        replica.lag_seconds = lag if lag != float("inf") else None
        replica.up = lag <= self.max_lag
        if replica.up:
            replica.error = ""
        elif paused:
            replica.error = "replay is paused"
        elif lag == float("inf"):
            replica.error = "has not caught up yet"
        else:
            replica.error = f"{lag:.1f} s behind"

    async def wait_for(self, primary: ReadConnections) -> list[str]:
        """Wait until every replica another process may read from has replayed the last commit.

        Called right after a commit, when the primary's flush position is that
        commit's end.  Waited for: each replica seen fresh within ``max_lag``
        plus a check interval (any process may still have it in rotation).  At
        most that long again: a replica still behind is then out of rotation
        here, and in every other process by its next check, which finds it
        further behind than ``max_lag``.  Returns those it stopped waiting for.
        """
        position = await _position(primary)
        if position is None:
            return []  # the primary is gone: nothing more can be written for them to miss
        window = self.max_lag + self.check_every + _CHECK_PATIENCE_SECONDS
        now = time.monotonic()
        deadline = now + window
        pending = [r for r in self.replicas if now - r.fresh_at <= window]
        while pending:
            for replica in list(pending):
                try:
                    async with replica.connections.connection() as connection:
                        got = await (await connection.execute(_REPLAYED)).fetchone()
                except (psycopg.Error, PoolTimeout, OSError) as exc:
                    self.failed(replica, exc)  # not answering: it serves nobody now
                    pending.remove(replica)
                    continue
                if _lsn(got[0] if got else None) >= position.flushed:
                    pending.remove(replica)
            if pending and time.monotonic() < deadline:
                await asyncio.sleep(_POLL_SECONDS)
            elif pending:
                break
        for replica in pending:
            replica.up, replica.error = False, "did not replay a change in time"
            replica.checked_at = time.monotonic()
        return [r.name for r in pending]

    def states(self) -> list[dict[str, Any]]:
        """Each replica's name, whether it is in rotation, its lag and why it is out."""
        return [
            {"name": r.name, "up": r.up, "lag_seconds": r.lag_seconds, "error": r.error}
            for r in self.replicas
        ]

    async def close(self) -> None:
        for replica in self.replicas:
            await replica.connections.close()
