"""The HTTP API end to end: real requests to a served app, real Postgres, Redis and worker."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx
import pytest

from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.jobs import documents
from ragsage.adapters.postgres.keys import Role, revoke_key
from ragsage.core.types import Scope

from . import helpers
from .api_harness import ApiServer, make_key, with_database
from .test_worker import _document
from .worker_harness import Deployment

ACME, GLOBEX = "acme", "globex"
HANDBOOK = (
    b"# Travel policy\n\n## Hotels\n\nHotel stays are reimbursed up to 180 euros per night in "
    b"Paris and 120 euros elsewhere.\n\n## Trains\n\nFirst class is allowed for journeys over "
    b"four hours.\n"
)


def wait_job(client: httpx.Client, job_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled", "superseded"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def upload(client: httpx.Client, name: str, data: bytes) -> httpx.Response:
    return client.post("/v1/documents", files={"file": (name, data, "text/markdown")})


def test_upload_then_query_cites_the_document(running: Deployment, api: ApiServer) -> None:
    client = api.client(make_key(running.settings, ACME))
    accepted = upload(client, "travel.md", HANDBOOK)

    assert accepted.status_code == 202, accepted.text
    body = accepted.json()
    assert accepted.headers["Location"] == f"/v1/jobs/{body['job_id']}"
    assert wait_job(client, body["job_id"])["state"] == "succeeded"

    answer = client.post("/v1/query", json={"question": "How much is a hotel night in Paris?"})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert "180 euros" in result["answer"] and not result["not_found"]
    assert result["citations"][0]["source"] == "travel.md"
    # The two one-paragraph sections form one chunk, cited under the first one's heading.
    assert result["citations"][0]["heading_path"] == ["Travel policy", "Hotels"]

    missing = client.post("/v1/query", json={"question": "What is the wifi password?"}).json()
    assert missing["not_found"] and missing["citations"] == []
    hello = client.post("/v1/query", json={"question": "hello!"}).json()
    assert hello["small_talk"]


def test_json_upload_and_duplicates(running: Deployment, api: ApiServer) -> None:
    client = api.client(make_key(running.settings, ACME))
    payload = {"filename": "travel.md", "content_base64": base64.b64encode(HANDBOOK).decode()}
    first = client.post("/v1/documents", json=payload)
    assert first.status_code == 202
    wait_job(client, first.json()["job_id"])
    again = client.post("/v1/documents", json={**payload, "filename": "copy.md"})

    assert again.status_code == 200 and again.json()["duplicate"]
    assert again.json()["document_id"] == first.json()["document_id"]
    documents = client.get("/v1/documents").json()["documents"]
    assert [d["filename"] for d in documents] == ["travel.md"]
    assert documents[0]["status"] == "ready"


def test_streaming_answers_arrive_event_by_event(running: Deployment, api: ApiServer) -> None:
    client = api.client(make_key(running.settings, ACME))
    wait_job(client, upload(client, "travel.md", HANDBOOK).json()["job_id"])

    events: list[tuple[str, Any]] = []
    with client.stream(
        "POST", "/v1/query", json={"question": "When is first class allowed?", "stream": True}
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name or "", json.loads(line.removeprefix("data: "))))

    kinds = [kind for kind, _ in events]
    assert kinds[-2:] == ["citations", "done"] and set(kinds[:-2]) == {"token"}
    assert len(kinds) > 4  # one event per token, not one lump
    text = "".join(data["text"] for kind, data in events if kind == "token")
    assert "four hours" in text and text.strip() == events[-1][1]["answer"]
    assert events[-2][1][0]["source"] == "travel.md"


def test_search_reports_stage_scores_and_honours_options(
    running: Deployment,
    api: ApiServer,
) -> None:
    client = api.client(make_key(running.settings, ACME))
    for name, data in (("travel.md", HANDBOOK), ("valves.md", _document(3))):
        wait_job(client, upload(client, name, data).json()["job_id"])

    query = {"query": "hotel night Paris", "top_k": 3}
    found = client.post("/v1/search", json={**query, "rerank": True}).json()
    top = found["results"][0]
    assert top["chunk"]["source"] == "travel.md"
    assert top["vector_score"] is not None and top["keyword_score"] is not None
    assert top["rerank_score"] is not None
    assert {"embed_ms", "vector_ms", "keyword_ms", "rerank_ms"} <= set(found["timing_ms"])
    # Unasked, a search skips the offline reranker; the ranking still leads with the hotel.
    plain = client.post("/v1/search", json=query).json()
    assert plain["results"][0]["chunk"]["source"] == "travel.md"
    assert plain["results"][0]["rerank_score"] is None and "rerank_ms" not in plain["timing_ms"]

    only_valves = client.post(
        "/v1/search",
        json={"query": "hotel valve3", "filters": {"sources": ["valves.md"]}, "rerank": False},
    ).json()
    assert {r["chunk"]["source"] for r in only_valves["results"]} == {"valves.md"}

    chunk_id = top["chunk"]["id"]
    fetched = client.get(f"/v1/chunks/{chunk_id}", params={"above": 1, "below": 1}).json()
    assert fetched["chunk"]["id"] == chunk_id
    assert client.get("/v1/sources").json() == {"sources": ["travel.md", "valves.md"]}


def test_a_search_returns_every_result_asked_for(running: Deployment, api: ApiServer) -> None:
    client = api.client(make_key(running.settings, ACME))
    # Thirty notes share one rare word; each is otherwise about something else.
    for n in range(30):
        note = f"# Note {n}\n\nShipment {n} of zirconium left dock {n} for warehouse {n * 7}.\n"
        wait_job(client, upload(client, f"note-{n}.md", note.encode()).json()["job_id"])

    found = client.post("/v1/search", json={"query": "zirconium", "top_k": 20}).json()
    assert len(found["results"]) == 20 and found["total_found"] >= 20
    assert all("zirconium" in r["chunk"]["text"] for r in found["results"])
    # A floor is the caller's to ask for: scores at or above it, and fewer results.
    scores = sorted({r["score"] for r in found["results"]}, reverse=True)
    assert len(scores) > 1
    floor = scores[len(scores) // 2]
    strict = client.post(
        "/v1/search", json={"query": "zirconium", "top_k": 20, "min_score": floor}
    ).json()
    kept = [r["score"] for r in strict["results"]]
    assert kept == [r["score"] for r in found["results"] if r["score"] >= floor]


def test_delete_removes_a_document_from_search(running: Deployment, api: ApiServer) -> None:
    client = api.client(make_key(running.settings, ACME))
    accepted = upload(client, "travel.md", HANDBOOK).json()
    wait_job(client, accepted["job_id"])
    document_id = accepted["document_id"]

    assert client.delete(f"/v1/documents/{document_id}").status_code == 204
    assert client.get(f"/v1/documents/{document_id}").status_code == 404
    assert client.post("/v1/search", json={"query": "hotel Paris"}).json()["results"] == []
    assert client.get(f"/v1/jobs/{accepted['job_id']}").status_code == 404
    assert client.delete(f"/v1/documents/{document_id}").status_code == 404


def test_cancel_then_retry_a_job(deployment: Deployment, api: ApiServer) -> None:
    client = api.client(make_key(deployment.settings, ACME))
    accepted = upload(client, "travel.md", HANDBOOK).json()  # no worker yet: stays queued
    job_id = accepted["job_id"]

    cancelled = client.post(f"/v1/jobs/{job_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert client.post(f"/v1/jobs/{job_id}/cancel").status_code == 409
    assert client.get("/v1/jobs", params={"state": "cancelled"}).json()["jobs"][0]["id"] == job_id

    deployment.worker().start()  # the cancelled job's message arrives and does nothing
    retried = client.post(f"/v1/jobs/{job_id}/retry")
    assert retried.status_code == 202 and retried.json()["state"] == "queued"
    assert wait_job(client, job_id)["state"] == "succeeded"
    assert client.get(f"/v1/documents/{accepted['document_id']}").json()["status"] == "ready"


def test_cancelling_a_running_job_stops_it_writing_nothing(
    deployment: Deployment,
    api: ApiServer,
) -> None:
    deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:flaky",
        TEST_EMBED_DELAY="3",
        TEST_EMBED_COUNTER=str(deployment.tmp / "calls"),
    ).start()
    client = api.client(make_key(deployment.settings, ACME))
    job_id = upload(client, "travel.md", HANDBOOK).json()["job_id"]
    deadline = time.monotonic() + 30
    while client.get(f"/v1/jobs/{job_id}").json()["stage"] != "embed":
        assert time.monotonic() < deadline
        time.sleep(0.1)

    assert client.post(f"/v1/jobs/{job_id}/cancel").json()["state"] == "cancelled"
    time.sleep(5)  # longer than the embed call: the worker would have written by now
    assert client.get(f"/v1/jobs/{job_id}").json()["state"] == "cancelled"
    assert client.post("/v1/search", json={"query": "hotel Paris"}).json()["results"] == []


def test_pagination_of_documents_and_jobs(running: Deployment, api: ApiServer) -> None:
    client = api.client(make_key(running.settings, ACME))
    for number in range(5):
        upload(client, f"n{number}.md", _document(number))
    first = client.get("/v1/documents", params={"limit": 2}).json()
    second = client.get("/v1/documents", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    third = client.get("/v1/documents", params={"limit": 2, "cursor": second["next_cursor"]}).json()

    names = [d["filename"] for page in (first, second, third) for d in page["documents"]]
    assert sorted(names) == [f"n{n}.md" for n in range(5)] and len(set(names)) == 5
    assert third["next_cursor"] is None
    jobs = client.get("/v1/jobs", params={"limit": 3}).json()
    rest = client.get("/v1/jobs", params={"limit": 3, "cursor": jobs["next_cursor"]}).json()
    assert len(jobs["jobs"]) == 3 and len(rest["jobs"]) == 2

    refused = client.get("/v1/documents", params={"cursor": "doc_\x00"})
    assert refused.status_code == 400 and "cursor" in refused.json()["error"]["message"]


def test_documents_filter_by_name_across_pages(running: Deployment, api: ApiServer) -> None:
    client = api.client(make_key(running.settings, ACME))
    for name in ("Travel-policy.md", "travel_2024.md", "expenses.md", "100%_travel.md"):
        upload(client, name, f"# {name}\n\nSome text about {name}.")

    def named(name: str, limit: int = 50) -> list[str]:
        found, cursor = [], None
        while True:
            params: dict[str, str | int] = {"name": name, "limit": limit}
            if cursor:
                params["cursor"] = cursor
            page = client.get("/v1/documents", params=params).json()
            found += [d["filename"] for d in page["documents"]]
            cursor = page["next_cursor"]
            if cursor is None:
                return sorted(found)

    # Case does not matter, a page of one still reaches every match, and % or _
    # in the filter are characters, not wildcards.
    travel = ["100%_travel.md", "Travel-policy.md", "travel_2024.md"]
    assert named("TRAVEL") == named("travel", limit=1) == travel
    assert named("%_") == ["100%_travel.md"] and named("l_2") == ["travel_2024.md"]
    assert named("nothing like it") == []
    too_long = client.get("/v1/documents", params={"name": "x" * 300})
    assert too_long.status_code == 400 and "name" in too_long.json()["error"]["message"]


async def test_finishing_an_ingest_keeps_the_upload_time(db: Database) -> None:
    # The listing pages newest first by upload time; if finishing an ingest
    # reset it, a document could move between two pages being read.
    kit = helpers.kit()
    await helpers.ingest(
        db, kit, Scope(ACME), "Paris hotels are booked by the travel desk.", "a.md"
    )
    async with db.session(Scope(ACME)) as session:
        (before,) = await documents.list_documents(session)
    await helpers.ingest(
        db, kit, Scope(ACME), "Paris hotels are booked by the travel desk.", "a.md"
    )
    async with db.session(Scope(ACME)) as session:
        (after,) = await documents.list_documents(session)
    assert after.updated_at > before.updated_at and after.created_at == before.created_at


def test_health_readiness_and_metrics(running: Deployment, api: ApiServer) -> None:
    anonymous = api.client()
    assert anonymous.get("/healthz").json()["status"] == "ok"
    ready = anonymous.get("/readyz").json()
    assert ready == {"status": "ok", "checks": {"database": "ok", "broker": "ok", "cache": "ok"}}

    client = api.client(make_key(running.settings, ACME))
    wait_job(client, upload(client, "travel.md", HANDBOOK).json()["job_id"])
    client.post("/v1/search", json={"query": "hotel"})
    metrics = anonymous.get("/metrics").text
    assert 'ragsage_http_requests_total{endpoint="/v1/search",method="POST",status="200"} 1.0' in (
        metrics
    )
    assert 'ragsage_jobs{state="succeeded"}' in metrics
    assert "ragsage_queue_depth{" in metrics


def test_readiness_names_a_broken_cache_as_degraded(
    deployment: Deployment,
) -> None:
    from .api_harness import serve
    from .redis_fixtures import closed_port

    broken = Deployment(
        settings=deployment.settings.replace(
            cache_redis_url=f"redis://127.0.0.1:{closed_port()}/0"
        ),
        env=deployment.env,
        enqueuer=deployment.enqueuer,
        tmp=deployment.tmp,
    )
    for server in serve(broken):
        ready = server.client().get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["status"] == "degraded"
        assert ready.json()["checks"]["cache"].startswith("unreachable")


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
        time.sleep(0.3)
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
    import subprocess
    import sys
    from pathlib import Path

    ragsage = str(Path(sys.executable).with_name("ragsage"))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ragsage, "keys", *args], env=running.env, capture_output=True, text=True, timeout=60
        )

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
