"""``Database.ping`` answers True or False, whatever goes wrong, so a health check never raises."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.engine import make_url

from ragsage.adapters.postgres import Database, PostgresConfig

from .gunicorn_harness import free_port


async def pinged(config: PostgresConfig) -> bool:
    database = Database(config)
    try:
        return await database.ping()
    finally:
        await database.dispose()


async def test_a_live_database_answers(db: Database) -> None:
    assert await db.ping() is True


async def test_every_kind_of_failure_is_false(pg_config: PostgresConfig) -> None:
    live = make_url(pg_config.app_dsn or pg_config.dsn)
    nothing_listens = live.set(host="127.0.0.1", port=free_port(), query={})
    no_such_database = live.set(database="ragsage_no_such_database")
    no_such_host = live.set(host="no-such-host.invalid", port=5432, query={})
    wrong_option = live.update_query_dict({"sslmode": "no-such-mode"})
    for url in (nothing_listens, no_such_database, no_such_host, wrong_option):
        dsn = url.render_as_string(hide_password=False)
        config = replace(pg_config, dsn=dsn, app_dsn=dsn)
        assert await pinged(config) is False, url
