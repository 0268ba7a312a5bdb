"""A database or broker outage, as a client of a running ``ragsage api`` sees it.

These tests stop and start their own Postgres and their own broker, so no
other test ever sees the outage.  The API is gunicorn with two workers, as
deployed; it is never restarted: requests must succeed again on their own once
the dependency is back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.embedded.redis import EmbeddedRedis
from ragsage.core.keys import Role

from .api_harness import make_key, with_database
from .conftest import as_user
from .gunicorn_harness import Gunicorn, start_gunicorn
from .worker_harness import POLL, WorkerProcess, make_settings

NAMESPACE = "weathered"
NOTE = b"# Storm notes\n\nThe lighthouse keeper logs every gale above force nine.\n"


@dataclass
class Stack:
    postgres: EmbeddedPostgres
    broker: EmbeddedRedis
    api: Gunicorn
    worker: WorkerProcess
    client: httpx.Client


@pytest.fixture
def stack(tmp_path: Path, redis_server: EmbeddedRedis) -> Iterator[Stack]:
    postgres = EmbeddedPostgres(tmp_path / "postgres")
    postgres.start()
    broker = EmbeddedRedis(tmp_path / "broker", persistent=True)
    broker.start()
    owner = postgres.ensure_database("ragsage")
    settings = make_settings(
        owner, as_user(owner, "ragsage_app"), broker.url(0), redis_server.url(2)
    )
    with_database(settings, lambda database: database.migrate())
    key = make_key(settings, NAMESPACE, Role.WRITE)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAGSAGE_")},
        **settings.to_env(),
    }
    api = start_gunicorn(env, tmp_path / "api.log", workers=2, threads=4)
    worker = WorkerProcess(env=env, log=tmp_path / "worker.log")
    client = httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    try:
        yield Stack(postgres, broker, api, worker, client)
    finally:
        client.close()
        worker.kill()
        api.stop()
        broker.stop()
        postgres.stop()


def _upload(client: httpx.Client, name: str, data: bytes = NOTE) -> httpx.Response:
    return client.post("/v1/documents", files={"file": (name, data, "text/markdown")})


def _assert_unavailable(response: httpx.Response, what: str) -> None:
    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "unavailable"
    assert what in response.json()["error"]["message"]
    assert int(response.headers["Retry-After"]) >= 1


def _until(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        outcome = check()
        if outcome or time.monotonic() > deadline:
            return outcome
        time.sleep(POLL)


def _job(client: httpx.Client, job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
    return job


def test_with_postgres_stopped_requests_answer_503_then_recover_unaided(stack: Stack) -> None:
    client = stack.client
    assert _upload(client, "before.md").status_code == 202
    assert client.post("/v1/search", json={"query": "gale"}).status_code == 200

    stack.postgres.stop()
    # Several of each, so both gunicorn workers and their pooled connections are hit.
    for _ in range(4):
        _assert_unavailable(client.post("/v1/search", json={"query": "gale"}), "database")
        _assert_unavailable(client.get("/v1/documents"), "database")
        _assert_unavailable(_upload(client, "during.md", NOTE + b"more\n"), "database")
    for streamed in (False, True):
        asked = client.post("/v1/query", json={"question": "Who logs gales?", "stream": streamed})
        _assert_unavailable(asked, "database")
    _assert_unavailable(client.get("/v1/jobs"), "database")
    _assert_unavailable(client.get("/v1/sources"), "database")
    assert client.get("/readyz").status_code == 503

    stack.postgres.start()
    assert _until(lambda: client.post("/v1/search", json={"query": "gale"}).status_code == 200)
    for _ in range(4):
        assert client.post("/v1/search", json={"query": "gale"}).status_code == 200
        assert client.get("/v1/documents").status_code == 200
    assert _upload(client, "after.md", NOTE + b"after\n").status_code == 202
    assert client.get("/readyz").status_code == 200
    assert stack.api.process.poll() is None  # the same server throughout
    # The operator's log names the outage in a line, not a traceback per request.
    log = stack.api.log.read_text(errors="replace")
    assert "the database is unavailable" in log and "Traceback" not in log


def test_with_the_broker_stopped_an_upload_is_accepted_and_runs_once_it_is_back(
    stack: Stack,
) -> None:
    client = stack.client
    stack.worker.start()
    stack.broker.stop()

    started = time.monotonic()
    accepted = _upload(client, "queued-in-the-storm.md")
    waited = time.monotonic() - started
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["job_id"]
    assert _job(client, job_id)["state"] == "queued"
    # Reads need no broker; readiness says what is missing.
    assert client.get("/v1/documents").status_code == 200
    assert client.get("/readyz").json()["checks"]["broker"] == "unreachable"

    stack.broker.start()
    assert _until(lambda: _job(client, job_id)["state"] == "succeeded"), _job(client, job_id)
    later = _upload(client, "after-the-storm.md", NOTE + b"calm\n")
    assert later.status_code == 202
    assert _until(lambda: _job(client, later.json()["job_id"])["state"] == "succeeded")
    hits = client.post("/v1/search", json={"query": "lighthouse keeper gale"}).json()["results"]
    assert {hit["chunk"]["source"] for hit in hits} >= {"queued-in-the-storm.md"}
    assert waited < 15, f"an upload waited {waited:.1f} s on a broker that was down"
    log = stack.api.log.read_text(errors="replace")
    assert "left for the watchdog to send" in log and "Traceback" not in log
