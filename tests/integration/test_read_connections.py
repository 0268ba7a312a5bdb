"""The read connections: one message per read, reused, bounded, and replaced when dead."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from ragsage.adapters.postgres import Database, PostgresConfig
from ragsage.adapters.postgres.read_connections import PoolTimeout, ReadConnections
from ragsage.core.scopes import Scope

ACME = Scope("acme")
BACKEND = "SELECT pg_backend_pid()"


async def test_reads_reuse_one_connection_and_a_failed_statement_does_not_spoil_it(
    db: Database,
) -> None:
    first = await db.read(ACME, [(BACKEND, {})])
    with pytest.raises(psycopg.errors.DivisionByZero):
        await db.read(ACME, [("SELECT 1 / 0", {})])
    # The same backend answers: nothing was reconnected for a read, nor for a failed one.
    assert await db.read(ACME, [(BACKEND, {})]) == first


async def test_values_travel_as_values_whatever_they_hold(db: Database) -> None:
    hostile = "x'); SELECT set_config('ragsage.namespace', 'globex', true); --"
    rows = await db.read(
        ACME,
        [
            (
                "SELECT %(text)s, CAST(%(list)s AS text[]), %(n)s, %(none)s::text, "
                "current_setting('ragsage.namespace', true)",
                {"text": hostile, "list": ["a'b", "c"], "n": 7, "none": None},
            )
        ],
    )
    assert rows == [(hostile, ["a'b", "c"], 7, None, "acme")]


async def test_a_connection_killed_while_idle_is_replaced_and_the_read_sent_again(
    db: Database, pg_config: PostgresConfig
) -> None:
    (backend,) = (await db.read(ACME, [(BACKEND, {})]))[0]
    with psycopg.connect(pg_config.dsn, autocommit=True) as owner:
        owner.execute("SELECT pg_terminate_backend(%s)", (backend,))
    await asyncio.sleep(0.2)
    (replacement,) = (await db.read(ACME, [(BACKEND, {})]))[0]
    assert replacement != backend


async def test_a_caller_past_the_limit_waits_then_gets_a_retryable_error(
    pg_config: PostgresConfig,
) -> None:
    assert pg_config.app_dsn is not None
    reads = ReadConnections(pg_config.app_dsn, limit=1, connect_timeout=5, wait_seconds=0.3)
    try:
        async with reads.connection():
            with pytest.raises(PoolTimeout, match="1 read connections stayed busy"):
                async with reads.connection():
                    pass
        async with reads.connection() as connection:  # free again once handed back
            assert (await (await connection.execute("SELECT 1")).fetchone()) == (1,)
    finally:
        await reads.close()


def test_used_from_a_new_event_loop_it_starts_afresh(pg_config: PostgresConfig) -> None:
    # A runtime driven by one asyncio.run after another (a script, a CLI) must
    # not hand a connection opened on a finished loop to the next.
    database = Database(pg_config)
    try:
        first = asyncio.run(database.read(ACME, [(BACKEND, {})]))
        second = asyncio.run(database.read(ACME, [(BACKEND, {})]))
        assert first != second
    finally:
        asyncio.run(database.dispose())
