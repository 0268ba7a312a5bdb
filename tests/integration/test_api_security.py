"""The API's doors: keys, tenants, roles, and what malformed or oversized requests get back."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.keys import revoke_key
from ragsage.core.keys import Role
from ragsage.core.scopes import Scope

from .api_harness import ApiServer, make_key, with_database
from .test_api import HANDBOOK, upload, wait_job
from .worker_harness import POLL, Deployment

ACME, GLOBEX = "acme", "globex"

# --------------------------------------------------------------------------- security


@pytest.fixture
def two_tenants(running: Deployment, api: ApiServer) -> dict[str, Any]:
    keys = {ns: make_key(running.settings, ns) for ns in (ACME, GLOBEX)}
    acme, globex = api.client(keys[ACME]), api.client(keys[GLOBEX])
    a = upload(acme, "travel.md", HANDBOOK).json()
    b = upload(globex, "secret.md", b"# Zeppelin\n\nThe zeppelin hangar code is 4471.").json()
    wait_job(acme, a["job_id"])
    wait_job(globex, b["job_id"])
    chunk_id = globex.post("/v1/search", json={"query": "zeppelin"}).json()["results"][0]
    return {"keys": keys, "a": a, "b": b, "b_chunk": chunk_id["chunk"]["id"]}


def test_requests_without_a_valid_key_are_refused(api: ApiServer, running: Deployment) -> None:
    anonymous = api.client()
    refused = anonymous.post("/v1/search", json={"query": "x"})
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert refused.json()["error"]["code"] == "unauthorized"
    for bad in ("rsk_notarealkey", "rsk_abcdefghij_" + "x" * 43, "Basic abc"):
        assert api.client(bad).get("/v1/sources").status_code == 401

    key = make_key(running.settings, ACME)
    assert api.client(key).get("/v1/sources").status_code == 200
    key_id = key.split("_")[1]

    async def revoke(database: Database) -> bool:
        async with database.session(Scope(ACME)) as session:
            return await revoke_key(session, key_id)

    assert with_database(running.settings, revoke)
    assert api.client(key).get("/v1/sources").status_code == 401


def test_a_key_revoked_between_searches_is_refused_at_once(
    api: ApiServer, running: Deployment
) -> None:
    key = make_key(running.settings, ACME)
    client = api.client(key)
    for _ in range(6):  # each server process has seen the key accepted by now
        assert client.post("/v1/search", json={"query": "holiday"}).status_code == 200
    key_id = key.split("_")[1]

    async def revoke(database: Database) -> bool:
        async with database.session(Scope(ACME)) as session:
            return await revoke_key(session, key_id)

    assert with_database(running.settings, revoke)
    for _ in range(3):
        refused = client.post("/v1/search", json={"query": "holiday"})
        assert refused.status_code == 401 and "results" not in refused.json()
        # Refused as a key, not as a request: no hint that the key once worked.
        malformed = client.post("/v1/search", json={"query": "holiday", "top_k": "many"})
        assert malformed.status_code == 401


def test_one_namespace_cannot_reach_another(api: ApiServer, two_tenants: dict[str, Any]) -> None:
    acme = api.client(two_tenants["keys"][ACME])
    b = two_tenants["b"]

    searched = acme.post("/v1/search", json={"query": "zeppelin hangar code"}).json()
    assert all(r["chunk"]["source"] != "secret.md" for r in searched["results"])
    asked = acme.post("/v1/query", json={"question": "What is the zeppelin hangar code?"}).json()
    assert asked["not_found"] and "4471" not in asked["answer"]
    for path in (
        f"/v1/documents/{b['document_id']}",
        f"/v1/jobs/{b['job_id']}",
        f"/v1/chunks/{two_tenants['b_chunk']}",
    ):
        response = acme.get(path)
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert acme.delete(f"/v1/documents/{b['document_id']}").status_code == 404
    assert acme.post(f"/v1/jobs/{b['job_id']}/cancel").status_code == 404
    assert [d["filename"] for d in acme.get("/v1/documents").json()["documents"]] == ["travel.md"]
    assert all(j["filename"] == "travel.md" for j in acme.get("/v1/jobs").json()["jobs"])
    assert acme.get("/v1/sources").json() == {"sources": ["travel.md"]}

    # A body naming the other namespace changes nothing.
    sneaky = acme.post("/v1/search", json={"query": "zeppelin", "namespace": GLOBEX}).json()
    assert all(r["chunk"]["source"] != "secret.md" for r in sneaky["results"])
    payload = {
        "filename": "planted.md",
        "content_base64": base64.b64encode(b"planted text").decode(),
        "namespace": GLOBEX,
    }
    planted = acme.post("/v1/documents", json=payload).json()
    globex = api.client(two_tenants["keys"][GLOBEX])
    assert globex.get(f"/v1/documents/{planted['document_id']}").status_code == 404
    assert acme.get(f"/v1/documents/{planted['document_id']}").status_code == 200


def test_roles_limit_what_a_key_may_do(api: ApiServer, running: Deployment) -> None:
    reader = api.client(make_key(running.settings, ACME, Role.READ))
    assert reader.get("/v1/documents").status_code == 200
    refused = upload(reader, "x.md", b"text")
    assert refused.status_code == 403 and "write role" in refused.json()["error"]["message"]
    assert reader.delete("/v1/documents/doc_x").status_code == 403

    writer = api.client(make_key(running.settings, ACME, Role.WRITE))
    wait_job(writer, upload(writer, "travel.md", HANDBOOK).json()["job_id"])
    target = {"embedding_model": "ragsage-hashing-128"}
    for client in (reader, writer):
        assert client.post("/v1/reindex", json=target).status_code == 403
        assert client.get("/v1/reindex").status_code == 403
    admin = api.client(make_key(running.settings, ACME, Role.ADMIN))
    started = admin.post("/v1/reindex", json=target)
    assert started.status_code == 202 and started.json()["queued"] == 1
    bad = admin.post("/v1/reindex", json={"embedding_model": "no-such-model"})
    assert bad.status_code == 400 and "cannot re-index" in bad.json()["error"]["message"]
    deadline = time.monotonic() + 60
    while True:
        generations = admin.get("/v1/reindex").json()["generations"]
        active = next(g for g in generations if g["state"] == "active")
        if active["embedding_model"] == "ragsage-hashing-128":
            assert not active["held"] and not active["complete"]  # live, not waiting
            break
        assert time.monotonic() < deadline, generations
        time.sleep(POLL)
    answer = admin.post("/v1/query", json={"question": "How much is a hotel night in Paris?"})
    assert "180 euros" in answer.json()["answer"]  # now served by the new model


# --------------------------------------------------------------------------- bad input


JSON = {"Content-Type": "application/json"}


def test_malformed_requests_get_4xx_json_errors(api: ApiServer, running: Deployment) -> None:
    client = api.client(make_key(running.settings, ACME))
    cases = [
        (
            client.post(
                "/v1/search", content=b"{not json", headers={"Content-Type": "application/json"}
            ),
            400,
        ),
        (client.post("/v1/search", json={"query": 5}), 422),
        (client.post("/v1/search", json={"query": "x", "top_k": "many"}), 422),
        (client.post("/v1/search", json={"query": "x", "surprise": True}), 422),
        (client.post("/v1/search", json=["not", "an", "object"]), 422),
        (client.post("/v1/search", content=b"query=x"), 415),
        (client.post("/v1/search", json={"query": "x" * 2_000_000}), 413),
        (client.post("/v1/query", json={"question": ""}), 422),
        (client.post("/v1/documents", json={"filename": "a.md", "content_base64": "!!!"}), 422),
        (client.post("/v1/documents", files={"file": ("e.md", b"", "text/plain")}), 422),
        (client.get("/v1/jobs", params={"state": "sleeping"}), 400),
        (client.get("/v1/jobs", params={"limit": "0"}), 400),
        (client.get("/v1/jobs/not-a-uuid"), 404),
        (client.get("/v1/nowhere"), 404),
        (client.put("/v1/search"), 405),
    ]
    for response, status in cases:
        assert response.status_code == status, (response.request.url, response.text)
        error = response.json()["error"]
        assert error["code"] and error["message"]
    detail = client.post("/v1/search", json={"query": "x", "surprise": True}).json()["error"]
    assert detail["details"][0]["location"] == "surprise"


def test_an_oversized_upload_is_refused_with_413(
    deployment: Deployment,
) -> None:
    from .api_harness import serve

    small = Deployment(
        settings=deployment.settings.replace(max_upload_bytes=1000),
        env=deployment.env,
        enqueuer=deployment.enqueuer,
        tmp=deployment.tmp,
    )
    for server in serve(small):
        client = server.client(make_key(small.settings, ACME))
        too_big = upload(client, "big.md", b"x" * 5000)
        assert too_big.status_code == 413 and too_big.json()["error"]["code"]


def test_keys_are_managed_from_the_command_line(api: ApiServer, running: Deployment) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return _keys_command(running, *args)

    created = cli("create", "--namespace", ACME, "--role", "read", "--name", "ci")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("rsk_") and "shown only once" in created.stderr
    assert api.client(key).get("/v1/sources").status_code == 200

    key_id = key.split("_")[1]
    listed = cli("list", "--namespace", ACME)
    assert key_id in listed.stdout and key not in listed.stdout and "live" in listed.stdout
    assert cli("revoke", key_id, "--namespace", GLOBEX).returncode == 1  # not its namespace
    assert cli("revoke", key_id, "--namespace", ACME).returncode == 0
    assert api.client(key).get("/v1/sources").status_code == 401


def test_keys_bound_to_principals_from_the_command_line(
    api: ApiServer, running: Deployment, two_tenants: dict[str, Any]
) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return _keys_command(running, *args)

    created = cli(
        "create",
        "--namespace",
        ACME,
        "--role",
        "read",
        "--principal",
        "group:sales",
        "--principal",
        "user:sam",
    )
    assert created.returncode == 0, created.stderr
    assert "bound to group:sales, user:sam" in created.stderr
    key = created.stdout.strip()
    listed = cli("list", "--namespace", ACME)
    assert f"{key.split('_')[1]}" in listed.stdout
    assert "principals: group:sales, user:sam" in listed.stdout
    # The namespace's documents are open (no list), so the bound key reads them ...
    assert api.client(key).get("/v1/sources").json()["sources"]
    # ... until one gets a list it is not on.
    writer = api.client(two_tenants["keys"][ACME])
    document = two_tenants["a"]["document_id"]
    assert (
        writer.patch(f"/v1/documents/{document}", json={"access": ["group:hr"]}).status_code == 200
    )
    assert api.client(key).get(f"/v1/documents/{document}").status_code == 404
    refused = cli("create", "--namespace", ACME, "--role", "admin", "--principal", "group:x")
    assert refused.returncode == 2 and "cannot be bound" in refused.stderr
    bad = cli("create", "--namespace", ACME, "--principal", "a,b")
    assert bad.returncode == 2 and "principal name" in bad.stderr


def test_delegate_keys_and_their_secrets_from_the_command_line(
    api: ApiServer, running: Deployment
) -> None:
    from ragsage.management.restricted_keys import grant_of, mint

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return _keys_command(running, *args)

    created = cli("create", "--namespace", ACME, "--role", "delegate", "--name", "product")
    assert created.returncode == 0, created.stderr
    key, secret_line = created.stdout.strip().splitlines()
    key_id = key.split("_")[1]
    assert secret_line.startswith(f"signing secret (key id {key_id}): rss_")
    secret = secret_line.rsplit(" ", 1)[1]
    listed = cli("list", "--namespace", ACME).stdout
    assert f"{key_id}  delegate" in listed and secret not in listed
    grant = grant_of(["user:gil"], 300)
    old = api.client(mint(key_id, ACME, secret, grant))
    assert old.get("/v1/key").json()["key_id"] == key_id

    rotated = cli("rotate-secret", key_id, "--namespace", ACME)
    assert rotated.returncode == 0 and "shown only once" in rotated.stderr
    fresh = rotated.stdout.strip()
    assert fresh.startswith("rss_") and fresh != secret
    time.sleep(0.3)  # past the API's shortest second look at a parent
    assert api.client(mint(key_id, ACME, fresh, grant)).get("/v1/key").status_code == 200
    assert old.get("/v1/key").status_code == 401  # the second look saw the rotation
    reader = make_key(running.settings, ACME, Role.READ).split("_")[1]
    refused = cli("rotate-secret", reader, "--namespace", ACME)
    assert refused.returncode == 1 and "no live delegate key" in refused.stderr


def _keys_command(running: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    """``ragsage keys ...`` against the running deployment."""
    ragsage = str(Path(sys.executable).with_name("ragsage"))
    return subprocess.run(
        [ragsage, "keys", *args], env=running.env, capture_output=True, text=True, timeout=60
    )
