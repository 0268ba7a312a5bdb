"""An embedded Postgres and Redis in a temporary folder, for benchmarks that need the services."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.adapters.sealing import new_operator_key
from ragsage.cli.api import gunicorn_argv
from ragsage.cli.worker import celery_worker_argv
from ragsage.runtime import build_database
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Stack:
    settings: Settings
    owner_url: str  # the database owner's URL, for reading across namespaces
    directory: Path
    postgres: EmbeddedPostgres | None = None  # the server itself (to make a standby of it)


@contextmanager
def local_stack(database: str, **overrides: Any) -> Iterator[Stack]:
    """Start both servers, yield settings pointing at them (offline, 384-d), stop them after."""
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        postgres, redis = EmbeddedPostgres(base / "pg"), EmbeddedRedis(base / "redis")
        postgres.start()
        redis.start()
        try:
            owner = postgres.ensure_database(database)
            settings = Settings.from_env(
                {},
                database_url=owner,
                app_database_url=owner.replace("postgres@", "ragsage_app@", 1),
                redis_url=redis.url(0),
                # The peer's benchmark embeds with a hashing function, so ours does
                # too: the figures compare the engines, not the embedding models.
                # Stored secrets are sealed, as in any deployment (a key made with the
                # sealer carries a check; bench/api_search.new_key makes keys without).
                **{
                    "embedding_dim": 384,
                    "embedder": "hashing",
                    "sealing_keys": new_operator_key(),
                    **overrides,
                },
            )
            yield Stack(settings, owner, base, postgres)
        finally:
            redis.stop()
            postgres.stop()


def migrate(settings: Settings) -> None:
    """Create or upgrade the schema of the settings' database."""

    async def run() -> None:
        database = build_database(settings)
        try:
            await database.migrate()
        finally:
            await database.dispose()

    asyncio.run(run())


def serve_api(
    settings: Settings, log: Path, workers: int = 2, threads: int = 8
) -> tuple[subprocess.Popen[bytes], str]:
    """The API under gunicorn on a free-ish loopback port, once it answers /healthz."""
    port = 18000 + random.randint(0, 999)
    argv = gunicorn_argv(f"127.0.0.1:{port}", workers=workers, threads=threads, timeout=120)
    argv = [a for a in argv if a != "--access-logfile=-"]
    process = subprocess.Popen(
        argv,
        env={**os.environ, **settings.to_env()},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(log.read_text()[-2000:])


class Worker:
    """One ``celery worker`` with both ragsage queues, for one phase."""

    def __init__(self, settings: Settings, processes: int, log: Path) -> None:
        queues = f"{settings.ingest_queue},{settings.reindex_queue}"
        self.log = log
        self.process = subprocess.Popen(
            celery_worker_argv(queues, concurrency=processes, loglevel="INFO"),
            cwd=ROOT,
            env={**os.environ, **settings.to_env()},
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while "ready." not in log.read_text(errors="replace"):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"worker did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
