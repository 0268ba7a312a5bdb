"""The API served over real HTTP by werkzeug in a thread, against a test deployment."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from flask import Flask
from werkzeug.serving import BaseWSGIServer, make_server

from api import create_app
from api.services import EXTENSION
from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.keys import create_key
from ragsage.adapters.sealing import sealer_or_none
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.runtime import Runtime, build_database
from ragsage.settings import Settings

from .worker_harness import POLL, Deployment

_T = TypeVar("_T")


@dataclass
class ApiServer:
    app: Flask
    server: BaseWSGIServer
    url: str
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, key: str | None = None) -> httpx.Client:
        """An HTTP client for this server, closed when the server is."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        made = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        self.clients.append(made)
        return made


def serve(deployment: Deployment, runtime: Runtime | None = None) -> Iterator[ApiServer]:
    """The API of ``deployment`` (on ``runtime``'s ports when given) over HTTP, until closed."""
    app = create_app(deployment.settings, runtime=runtime)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    # shutdown() waits for the loop to look at its flag, by default every 0.5 s: half
    # a second of every test's teardown.
    thread = threading.Thread(target=server.serve_forever, args=(POLL,), daemon=True)
    thread.start()
    served = ApiServer(app=app, server=server, url=f"http://127.0.0.1:{server.server_port}")
    try:
        yield served
    finally:
        for client in served.clients:
            client.close()
        server.shutdown()
        thread.join(10)
        app.extensions[EXTENSION].close()


def ingested(
    client: httpx.Client,
    name: str,
    data: bytes,
    timeout: float = 60,
    media_type: str = "text/markdown",
) -> dict[str, Any]:
    """Upload a file through the API and wait for its job to succeed; returns the job."""
    reply = client.post("/v1/documents", files={"file": (name, data, media_type)})
    assert reply.status_code == 202, reply.text
    job_id = reply.json()["job_id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["state"] == "succeeded":
            return job
        assert job["state"] in ("queued", "running"), job
        time.sleep(POLL)
    raise AssertionError(f"job {job_id} did not finish in {timeout}s")


def with_database(settings: Settings, work: Callable[[Database], Awaitable[_T]]) -> _T:
    """Run ``work`` on a fresh pool in a fresh loop (test code outside any fixture loop)."""

    async def run() -> _T:
        database = build_database(settings)
        try:
            return await work(database)
        finally:
            await database.dispose()

    return asyncio.run(run())


def make_key(
    settings: Settings,
    namespace: str,
    role: Role = Role.WRITE,
    principals: Sequence[str] = (),
) -> str:
    """A new API key of ``namespace``; with ``principals``, bound to them (a read key)."""

    async def create(database: Database) -> str:
        async with database.session(Scope(namespace)) as session:
            return (
                await create_key(
                    session,
                    Scope(namespace),
                    role,
                    "test",
                    sorted(principals),
                    sealer_or_none(settings.sealing_keys),
                )
            ).key

    return with_database(settings, create)
