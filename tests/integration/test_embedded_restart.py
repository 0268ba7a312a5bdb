"""The embedded Postgres can be stopped and started again by the process that owns it."""

from __future__ import annotations

from pathlib import Path

import psycopg

from ragsage.embedded.postgres import EmbeddedPostgres


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
