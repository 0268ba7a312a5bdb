"""A real Celery worker process, and a deployment (Postgres + Redis) for it."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest
from sqlalchemy import text

from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.adapters.sealing import new_operator_key
from ragsage.cli.worker import celery_worker_argv
from ragsage.core.jobs import Job
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer
from ragsage.runtime import build_runtime
from ragsage.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
# How often the tests look again at something they wait for.  A small job runs in
# about 20 ms; looking every 0.2 s made the look, not the job, most of each wait.
POLL = 0.05
# The line Celery logs when a delivery of a ragsage task has ended, whatever its outcome.
_DELIVERY_ENDED = re.compile(r"Task ragsage\.\w+\[[^\]]+\] (?:succeeded|raised|failed)")


@pytest.fixture(scope="session", name="broker")
def broker_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    """The broker: persistent and never evicting, as production runs it."""
    server = EmbeddedRedis(tmp_path_factory.mktemp("broker"), persistent=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class WorkerProcess:
    """``celery worker`` in its own process group, so SIGKILL takes all of it."""

    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(
        self,
        *,
        pool: str = "prefork",
        concurrency: int = 1,
        timeout: float = 60,
        command: list[str] | None = None,
    ) -> None:
        """Start the worker (``command`` replaces the direct Celery command line)."""
        queues = f"{self.env['RAGSAGE_INGEST_QUEUE']},{self.env['RAGSAGE_REINDEX_QUEUE']}"
        with self.log.open("ab") as handle:
            self.process = self._spawn(queues, pool, concurrency, handle, command)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log.read_text()[-3000:]}")
            if "ready." in self.log.read_text(errors="replace"):
                return
            time.sleep(POLL)
        raise RuntimeError(f"worker not ready in {timeout}s:\n{self.log.read_text()[-3000:]}")

    def _spawn(
        self,
        queues: str,
        pool: str,
        concurrency: int,
        handle: IO[bytes],
        command: list[str] | None,
    ) -> subprocess.Popen[bytes]:
        argv = command or [
            *celery_worker_argv(queues, pool=pool, concurrency=concurrency),
            "--without-heartbeat",
            f"--hostname=test-{uuid.uuid4().hex[:8]}@%h",
        ]
        return subprocess.Popen(
            argv,
            cwd=ROOT,
            env=self.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_for_log(
        self, pattern: str | re.Pattern[str], times: int = 1, timeout: float = 60
    ) -> str:
        """Until ``pattern`` (a str is literal text) occurs ``times`` times in the log.

        Returns the log as it was then.
        """
        found = re.compile(re.escape(pattern)) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        while len(found.findall(text := self.log.read_text(errors="replace"))) < times:
            assert time.monotonic() < deadline, f"{pattern!r} x{times} not logged:\n{text[-3000:]}"
            time.sleep(POLL)
        return text

    def wait_deliveries_ended(self, deliveries: int, timeout: float = 60) -> str:
        """Until this worker has ended ``deliveries`` task deliveries; returns the log.

        Past that, the jobs it ran can write nothing more: a test need not sleep
        for "longer than the job would take".
        """
        return self.wait_for_log(_DELIVERY_ENDED, deliveries, timeout)

    def kill(self) -> None:
        """SIGKILL the whole worker: main process and pool children at once."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        """SIGTERM to the main process, as a container stop sends it.

        Celery's warm shutdown lets the pool finish the current job, then exits.
        """
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Deployment:
    settings: Settings
    env: dict[str, str]
    enqueuer: Enqueuer
    tmp: Path
    workers: list[WorkerProcess] = field(default_factory=list)

    def worker(self, **extra_env: str) -> WorkerProcess:
        process = WorkerProcess(
            env={**self.env, **extra_env}, log=self.tmp / f"worker-{len(self.workers)}.log"
        )
        self.workers.append(process)
        return process

    def chunk_count(self, namespace: str, document_id: str | None = None) -> int:
        """The chunks stored for the namespace (or one of its documents), counted in SQL."""

        async def count() -> int:
            runtime = build_runtime(self.settings)
            try:
                async with runtime.database.session(Scope(namespace)) as session:
                    sql = "SELECT count(*) FROM ragsage_chunks"
                    params = {}
                    if document_id:
                        sql += " WHERE document_id = :d"
                        params["d"] = document_id
                    return int(await session.scalar(text(sql), params) or 0)
            finally:
                await runtime.aclose()

        return asyncio.run(count())

    def wait(
        self,
        namespace: str,
        job_ids: list[str],
        timeout: float = 90,
        until: Callable[[Job], bool] | None = None,
    ) -> dict[str, Job]:
        """Poll until every job has finished (or ``until`` holds for it)."""
        done = until or (lambda job: job.state.finished)
        deadline = time.monotonic() + timeout
        latest: dict[str, Job] = {}
        while time.monotonic() < deadline:
            for job_id in job_ids:
                job = self.enqueuer.job_status(namespace, job_id)
                assert job is not None, job_id
                latest[job_id] = job
            if all(done(job) for job in latest.values()):
                return latest
            time.sleep(POLL)
        logs = "\n".join(w.log.read_text(errors="replace")[-2000:] for w in self.workers)
        raise AssertionError(f"jobs not done in {timeout}s: {latest}\n{logs}")


def make_settings(database_url: str, app_url: str, broker_url: str, cache_url: str) -> Settings:
    tag = uuid.uuid4().hex[:8]
    return Settings.from_env(
        {},
        database_url=database_url,
        app_database_url=app_url,
        redis_url=broker_url,
        cache_redis_url=cache_url,
        embedding_dim=256,
        embedding_widths="16,64,128",
        ingest_queue=f"test-ingest-{tag}",
        reindex_queue=f"test-reindex-{tag}",
        job_lease=3.0,
        job_heartbeat=1.0,
        watchdog_interval=1.0,
        job_unsent_grace=2.0,
        job_retry_backoff=1.5,
        job_retry_backoff_max=2.0,
        job_soft_time_limit=60.0,
        job_time_limit=70.0,
        broker_visibility_timeout=600.0,
        # Far above what any test sends, except the rate-limit tests, which set their own.
        rate_limit_search_key="1000/second",
        rate_limit_search_namespace="1000/second",
        rate_limit_other_key="1000/second",
        rate_limit_other_namespace="1000/second",
        rate_limit_unknown_keys="1000/second",
        # Webhooks: receivers in tests listen on loopback, and retries come quickly.
        sealing_keys=new_operator_key(),
        webhook_allow_private=True,
        webhook_timeout=2.0,
        webhook_retry_base=0.3,
        webhook_retry_cap=1.0,
        webhook_poll_interval=0.5,
    )
