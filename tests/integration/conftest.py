"""Real services for integration tests, started by the tests themselves.

Postgres: the embedded server (pgvector included) in a temporary directory, or
the server named by ``RAGSAGE_DATABASE_URL`` — a role allowed to create
databases — when set.  Each test gets a fresh database, so no test sees
another's rows.  A test that takes ``database_url`` alone gets an empty one, and
its migrations start from nothing; one that takes ``db`` (or a fixture built on
it) gets a copy of a database the session migrated from nothing once, which
``db`` then migrates again, as every start of the service does.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.adapters.postgres import Database, PostgresConfig
from ragsage.jobs.enqueue import Enqueuer

if TYPE_CHECKING:
    from .api_harness import ApiServer

# Fixtures of the other harness modules, registered for every integration test.
from .redis_fixtures import redis_server_fixture  # noqa: F401
from .webhook_harness import receiver_fixture  # noqa: F401
from .worker_harness import Deployment, broker_fixture, make_settings  # noqa: F401

TEST_DIM = 256
# The other widths the tests re-index into; each has its index from migrate.
TEST_WIDTHS = (16, 64, 128)


@dataclass
class PostgresServer:
    """Creates databases and hands out owner and app URLs for them."""

    admin_url: str
    embedded: EmbeddedPostgres | None = None

    def create_database(self, template: str | None = None) -> str:
        """A new database: empty, or a copy of the database named ``template``."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"{copy}')
        parts = urlsplit(self.admin_url)
        return urlunsplit(parts._replace(path=f"/{name}"))

    def drop_database(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def as_user(url: str, user: str, password: str | None = None) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    credentials = user if password is None else f"{user}:{password}"
    return urlunsplit(parts._replace(netloc=f"{credentials}@{host}"))


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    external = os.environ.get("RAGSAGE_DATABASE_URL")
    if external:
        yield PostgresServer(admin_url=external)
        return
    # Not under pytest's temp root: pytest strips group and other permissions
    # from that root whenever a session starts, which would lock the server's
    # own (unprivileged) user out of its data directory mid-run.
    root = Path(tempfile.mkdtemp(prefix="ragsage-test-postgres-"))
    embedded = EmbeddedPostgres(root / "data")
    embedded.start()
    try:
        yield PostgresServer(admin_url=embedded.url(), embedded=embedded)
    finally:
        embedded.stop()
        shutil.rmtree(root, ignore_errors=True)


def config_for(database_url: str) -> PostgresConfig:
    # Embedded Postgres trusts local sockets; against an external server the app
    # role's password comes from RAGSAGE_TEST_APP_PASSWORD.
    app_url = as_user(database_url, "ragsage_app", os.environ.get("RAGSAGE_TEST_APP_PASSWORD"))
    return PostgresConfig(
        dsn=database_url, app_dsn=app_url, embedding_dim=TEST_DIM, embedding_widths=TEST_WIDTHS
    )


@pytest.fixture(scope="session")
def migrated_template(postgres_server: PostgresServer) -> Iterator[str]:
    """The name of a database migrated from nothing with ``config_for``, to be copied.

    Copying it takes a tenth of the time of replaying every migration, which
    hundreds of tests would otherwise each do before their first statement.
    """
    url = postgres_server.create_database()

    async def migrate() -> None:
        database = Database(config_for(url))
        try:
            await database.migrate()
        finally:
            await database.dispose()

    asyncio.run(migrate())
    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(postgres_server.admin_url, autocommit=True) as connection:
        # A copy needs its template free of sessions: refuse any from now on (and
        # autovacuum skips it, so nothing changes under the copies either).
        connection.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
    yield name
    postgres_server.drop_database(url)


@pytest.fixture
def database_url(postgres_server: PostgresServer, request: pytest.FixtureRequest) -> Iterator[str]:
    migrated = "db" in request.fixturenames
    template = request.getfixturevalue("migrated_template") if migrated else None
    url = postgres_server.create_database(template)
    yield url
    postgres_server.drop_database(url)


@pytest.fixture
def pg_config(database_url: str) -> PostgresConfig:
    return config_for(database_url)


@pytest.fixture
async def db(pg_config: PostgresConfig) -> AsyncIterator[Database]:
    # The database is a copy of `migrated_template`, which holds this configuration's schema.
    assert pg_config == config_for(pg_config.dsn), "db migrates only the test configuration"
    database = Database(pg_config)
    await database.migrate()
    yield database
    await database.dispose()


@pytest.fixture
def deployment(
    db: Database,
    pg_config: PostgresConfig,
    broker: EmbeddedRedis,
    redis_server: EmbeddedRedis,
    tmp_path: Path,
) -> Iterator[Deployment]:
    assert pg_config.app_dsn is not None
    settings = make_settings(pg_config.dsn, pg_config.app_dsn, broker.url(0), redis_server.url(1))
    enqueuer = Enqueuer(settings)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAGSAGE_")},
        **settings.to_env(),
    }
    deployment = Deployment(settings=settings, env=env, enqueuer=enqueuer, tmp=tmp_path)
    try:
        yield deployment
    finally:
        for worker in deployment.workers:
            worker.kill()
        enqueuer.close()


@pytest.fixture
def running(deployment: Deployment) -> Iterator[Deployment]:
    """The deployment with one worker started."""
    deployment.worker().start()
    yield deployment


@pytest.fixture
def api(deployment: Deployment) -> Iterator[ApiServer]:
    from .api_harness import serve

    yield from serve(deployment)
