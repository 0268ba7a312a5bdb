"""Services hold the app role's credentials only; the owner's are for ``ragsage migrate``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from ragsage.core.errors import ConfigurationError
from ragsage.core.keys import Role
from ragsage.runtime import build_database

from .api_harness import make_key, serve
from .worker_harness import POLL, Deployment


def _until(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (outcome := check()) and time.monotonic() < deadline:
        time.sleep(POLL)
    return outcome


def test_the_api_and_a_worker_serve_with_only_the_app_role_url(deployment: Deployment) -> None:
    # What an operator does once, with the owner's URL: migrate (the fixture) and a key.
    key = make_key(deployment.settings, "acme", Role.ADMIN)
    app_only = deployment.settings.replace(database_url="")
    env = {**deployment.env, "RAGSAGE_DATABASE_URL": ""}
    only_app = Deployment(
        settings=app_only, env=env, enqueuer=deployment.enqueuer, tmp=deployment.tmp
    )
    worker = only_app.worker()
    deployment.workers.append(worker)  # killed by the fixture
    worker.start(pool="solo")
    servers = serve(only_app)
    server = next(servers)
    try:
        client: httpx.Client = server.client(key)
        accepted = client.post(
            "/v1/documents",
            files={"file": ("kiln.md", b"# Kiln\n\nThe kiln fires at 1280 degrees.\n")},
        )
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        job = _until(lambda: client.get(f"/v1/jobs/{job_id}").json()["state"] == "succeeded")
        assert job, client.get(f"/v1/jobs/{job_id}").json()
        hits = client.post("/v1/search", json={"query": "kiln fires"}).json()["results"]
        assert hits[0]["chunk"]["source"] == "kiln.md"
        # A re-index needs no DDL now, so an app-role-only API can start one.
        started = client.post("/v1/reindex", json={"embedding_model": "ragsage-hashing-128"})
        assert started.status_code == 202, started.text

        def switched() -> bool:
            generations = client.get("/v1/reindex").json()["generations"]
            active = [g for g in generations if g["state"] == "active"]
            return bool(active) and active[0]["embedding_model"] == "ragsage-hashing-128"

        assert _until(switched)
        assert client.post("/v1/search", json={"query": "kiln"}).json()["results"]
    finally:
        servers.close()
    assert "RAGSAGE_DATABASE_URL" not in {k for k, v in env.items() if v}


def test_migrating_with_only_the_app_role_url_says_the_owner_is_needed(
    deployment: Deployment,
) -> None:
    database = build_database(deployment.settings.replace(database_url=""))

    async def attempt() -> None:
        try:
            await database.migrate()
        finally:
            await database.dispose()

    with pytest.raises(ConfigurationError, match="RAGSAGE_DATABASE_URL"):
        asyncio.run(attempt())
