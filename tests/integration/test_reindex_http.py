"""The re-index workflow over HTTP with an admin key: start held, activate, roll back, drop."""

from __future__ import annotations

import time
from typing import Any

import httpx

from ragsage.core.keys import Role

from .api_harness import ApiServer, ingested, make_key
from .worker_harness import POLL, Deployment


def _until(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (outcome := check()) and time.monotonic() < deadline:
        time.sleep(POLL)
    return outcome


def _generations(admin: httpx.Client) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = admin.get("/v1/reindex").json()["generations"]
    return found


def _upload(client: httpx.Client, name: str, text: str) -> None:
    ingested(client, name, text.encode())


def test_an_admin_runs_a_gated_reindex_and_its_rollback_over_http(
    deployment: Deployment, api: ApiServer
) -> None:
    deployment.worker().start(pool="solo")
    admin = api.client(make_key(deployment.settings, "acme", Role.ADMIN))
    reader = api.client(make_key(deployment.settings, "acme", Role.READ))
    for n in range(3):
        _upload(admin, f"note{n}.md", f"# Note {n}\n\nThe heron{n} nests by the weir.\n")

    started = admin.post(
        "/v1/reindex", json={"embedding_model": "ragsage-hashing-128", "held": True}
    )
    assert started.status_code == 202, started.text
    generation = started.json()["generation"]
    # Held: complete, yet the old model stays active until the gate says so.
    assert _until(lambda: any(g["id"] == generation and g["complete"] for g in _generations(admin)))
    time.sleep(0.5)
    assert [g["embedding_model"] for g in _generations(admin) if g["state"] == "active"] == [
        "ragsage-hashing-256"
    ]
    assert reader.post(f"/v1/reindex/{generation}/activate").status_code == 403
    activated = admin.post(f"/v1/reindex/{generation}/activate")
    assert activated.status_code == 200, activated.text
    assert activated.json()["embedding_model"] == "ragsage-hashing-128"
    assert admin.post(f"/v1/reindex/{generation}/activate").status_code == 409  # done already

    _upload(admin, "late.md", "# Late\n\nThe otter returned in spring.\n")
    refused = admin.post("/v1/reindex/rollback", json={})
    assert refused.status_code == 409, refused.text
    assert "would lose 1 document uploaded or replaced" in refused.json()["error"]["message"]
    rolled = admin.post("/v1/reindex/rollback", json={"force": True})
    assert rolled.status_code == 200 and rolled.json()["embedding_model"] == "ragsage-hashing-256"

    dropped = admin.post("/v1/reindex/drop-previous")
    assert dropped.status_code == 200 and dropped.json()["freed_chunks"] >= 4
    assert [g["state"] for g in _generations(admin)] == ["active"]
    hits = reader.post("/v1/search", json={"query": "heron nests"}).json()["results"]
    assert hits and hits[0]["chunk"]["source"].startswith("note")
