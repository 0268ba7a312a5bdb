"""Webhooks end to end: real uploads, real workers killed mid-way, a real receiver that fails.

Endpoints are made through the API with admin keys; a real worker (two pool
processes) ingests, is SIGKILLed twice, and sends the events from its main
process; the receiver is a process of its own on loopback (the test settings
allow private targets) and answers 500 for a while in the middle.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import text
from standardwebhooks.webhooks import Webhook as StandardWebhook

from ragsage.core.jobs import JobState
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope
from ragsage.runtime import build_database

from .api_harness import ApiServer, make_key
from .webhook_harness import Receiver, real_sections
from .worker_harness import Deployment

ACME, OTHER = "acme", "other"


def _hook(client: Any, url: str) -> dict[str, Any]:
    reply = client.post("/v1/webhooks", json={"url": url, "description": "the upload service"})
    assert reply.status_code == 201, reply.text
    made: dict[str, Any] = reply.json()
    assert made["secret"].startswith("whsec_") and made["enabled"]
    assert reply.headers["Cache-Control"] == "no-store"
    # The secret is shown once: never in a listing or a read.
    assert "secret" not in client.get(f"/v1/webhooks/{made['id']}").json()
    assert made["secret"] not in client.get("/v1/webhooks").text
    return made


def _rolled_back_failure(deployment: Deployment, job_id: str) -> None:
    """Mark a finished job failed, then roll the transaction back: no event may report it."""

    async def change() -> None:
        database = build_database(deployment.settings)
        try:
            async with database.session(Scope(ACME)) as session:
                await session.execute(
                    text("UPDATE ragsage_jobs SET state = 'failed' WHERE id = :id"),
                    {"id": job_id},
                )
                await session.rollback()
        finally:
            await database.dispose()

    asyncio.run(change())


def _same_instant(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str) and left[:4].isdigit():
        try:
            return datetime.fromisoformat(left) == datetime.fromisoformat(right)
        except ValueError:
            pass
    return bool(left == right)


def test_every_terminal_event_arrives_signed_through_kills_and_an_outage(
    deployment: Deployment, api: ApiServer, receiver: Receiver
) -> None:
    acme_admin = api.client(make_key(deployment.settings, ACME, Role.ADMIN))
    other_admin = api.client(make_key(deployment.settings, OTHER, Role.ADMIN))
    acme_hook = _hook(acme_admin, f"{receiver.url}/acme")
    other_hook = _hook(other_admin, f"{receiver.url}/other")
    # A read or write key may not see or manage endpoints.
    writer = api.client(make_key(deployment.settings, ACME, Role.WRITE))
    assert writer.get("/v1/webhooks").status_code == 403

    documents = real_sections(220)
    acme_docs, other_docs = documents[:200], documents[200:]
    worker = deployment.worker()
    worker.start(concurrency=2)
    jobs: dict[str, list[str]] = {ACME: [], OTHER: []}

    def upload(namespace: str, batch: list[tuple[str, bytes]]) -> None:
        for name, data in batch:
            outcome = deployment.enqueuer.enqueue_document(namespace, name, data=data)
            assert outcome.job_id is not None
            jobs[namespace].append(str(outcome.job_id))

    upload(ACME, acme_docs[:70])
    upload(OTHER, other_docs[:10])
    time.sleep(1.0)
    worker.kill()  # mid-ingestion, and mid-delivery
    worker = deployment.worker()
    worker.start(concurrency=2)
    receiver.mode("/acme", "fail")
    upload(ACME, acme_docs[70:140])
    # The receiver fails until it has turned away a few deliveries, however slow the machine.
    deadline = time.monotonic() + 120
    while sum(r["status"] == 500 for r in receiver.records("/acme")) < 10:
        assert time.monotonic() < deadline, "no delivery reached the failing receiver"
        time.sleep(0.2)
    receiver.mode("/acme", "ok")
    worker.kill()
    worker = deployment.worker()
    worker.start(concurrency=2)
    upload(ACME, acme_docs[140:])
    upload(OTHER, other_docs[10:])

    finished = deployment.wait(ACME, jobs[ACME], timeout=240)
    finished.update(deployment.wait(OTHER, jobs[OTHER], timeout=60))
    assert all(job.state is JobState.SUCCEEDED for job in finished.values()), {
        job_id: job.error for job_id, job in finished.items() if job.state is not JobState.SUCCEEDED
    }
    _rolled_back_failure(deployment, jobs[ACME][0])

    acme = receiver.wait_for("/acme", 200, timeout=120)
    other = receiver.wait_for("/other", 20, timeout=60)
    assert receiver.records("/acme") and any(r["status"] == 500 for r in receiver.records("/acme"))

    for got, hook, namespace in ((acme, acme_hook, ACME), (other, other_hook, OTHER)):
        verifier = StandardWebhook(hook["secret"])
        by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for record in got:
            # Each delivery verifies with the standard library, over the exact bytes sent.
            assert verifier.verify(record["body"], record["headers"]) == record["event"]
            assert record["headers"]["webhook-id"] == record["event"]["id"]
            by_id[record["event"]["id"]].append(record["event"])
        # A duplicate is the same event again, never a second event for the same change.
        for copies in by_id.values():
            assert all(copy == copies[0] for copy in copies)
        reported = [(e[0]["type"], e[0]["data"]["id"]) for e in by_id.values()]
        assert len(reported) == len(set(reported))
        # Every job's terminal event arrived, and only the namespace's own.
        assert {e[0]["namespace"] for e in by_id.values()} == {namespace}
        assert sorted(job for kind, job in reported if kind == "job.succeeded") == sorted(
            jobs[namespace]
        )
        assert {kind for kind, _ in reported} == {"job.succeeded"}

    # The event's data is what the API says of the job (never the document's text).
    first = next(r["event"] for r in acme if r["event"]["data"]["id"] == jobs[ACME][0])
    shown = acme_admin.get(f"/v1/jobs/{jobs[ACME][0]}").json()
    assert first["data"].keys() == shown.keys()
    assert all(_same_instant(first["data"][k], shown[k]) for k in shown), (first, shown)
    text_of_first = acme_docs[0][1].decode()
    assert all(
        line not in json.dumps(first) for line in text_of_first.splitlines() if len(line) > 40
    )

    # The outage is visible on the endpoint: its deliveries name the 500s, then the success.
    listed = acme_admin.get(f"/v1/webhooks/{acme_hook['id']}/deliveries?limit=200").json()
    assert len(listed["deliveries"]) == 200
    assert all(d["state"] == "delivered" and d["last_status"] == 200 for d in listed["deliveries"])
    assert any(d["attempts"] > 1 for d in listed["deliveries"])
