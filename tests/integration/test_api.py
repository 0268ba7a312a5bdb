"""The HTTP API end to end: real requests to a served app, real Postgres, Redis and worker."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx

from ragsage.adapters.postgres import Database
from ragsage.adapters.postgres.jobs import documents
from ragsage.core.scopes import Scope

from . import helpers
from .api_harness import ApiServer, make_key
from .test_worker import _document
from .worker_harness import POLL, Deployment

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
        time.sleep(POLL)
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
    cited = result["citations"][0]
    assert cited["source"] == "travel.md"
    # The two one-paragraph sections form one chunk; the citation names the quoted one.
    assert cited["heading_path"] == ["Travel policy", "Hotels"]
    assert cited["located"] == "sentence" and "180 euros per night" in cited["quote"]
    assert cited["text"][cited["start"] : cited["end"]] == cited["quote"]
    chunk = client.get(f"/v1/chunks/{cited['chunk_id']}").json()["chunk"]
    assert [s["heading_path"] for s in chunk["sections"]] == [
        ["Travel policy", "Hotels"],
        ["Travel policy", "Trains"],
    ]
    assert "## Trains" in chunk["text"][chunk["sections"][1]["start"] :]

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
    [cited] = events[-2][1]
    assert cited["source"] == "travel.md"
    # The sentence sits in the chunk's second section, which the citation names.
    assert cited["heading_path"] == ["Travel policy", "Trains"]
    assert cited["title"] == "Travel policy > Trains"
    assert cited["quote"] == "First class is allowed for journeys over four hours."


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


def test_an_upload_says_which_class_its_job_waits_in(
    deployment: Deployment, api: ApiServer
) -> None:
    client = api.client(make_key(deployment.settings, ACME))
    single = upload(client, "travel.md", HANDBOOK).json()
    batch = client.post(
        "/v1/documents",
        files={"file": ("batch.md", b"# Batch\n\nOne file of many.\n", "text/markdown")},
        data={"job_class": "bulk"},
    ).json()
    as_json = client.post(
        "/v1/documents",
        json={
            "filename": "json.md",
            "content_base64": base64.b64encode(b"# Sent as JSON\n").decode(),
            "job_class": "bulk",
        },
    ).json()

    classes = [
        client.get(f"/v1/jobs/{body['job_id']}").json()["job_class"]
        for body in (single, batch, as_json)
    ]
    assert classes == ["interactive", "bulk", "bulk"]
    refused = client.post(
        "/v1/documents",
        files={"file": ("odd.md", b"# Odd\n", "text/markdown")},
        data={"job_class": "urgent"},
    )
    assert refused.status_code == 422, refused.text  # the API's answer to a field out of range
    assert "job_class" in refused.text and "interactive" in refused.text
    names = {d["filename"] for d in client.get("/v1/documents").json()["documents"]}
    assert names == {"travel.md", "batch.md", "json.md"}  # the refused file left nothing


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
    worker = deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:flaky",
        TEST_EMBED_DELAY="3",
        TEST_EMBED_COUNTER=str(deployment.tmp / "calls"),
    )
    worker.start()
    client = api.client(make_key(deployment.settings, ACME))
    job_id = upload(client, "travel.md", HANDBOOK).json()["job_id"]
    deadline = time.monotonic() + 30
    while client.get(f"/v1/jobs/{job_id}").json()["stage"] != "embed":
        assert time.monotonic() < deadline
        time.sleep(0.1)

    assert client.post(f"/v1/jobs/{job_id}/cancel").json()["state"] == "cancelled"
    # Its delivery has ended (the embed call returned, or the heartbeat saw the cancel):
    # whatever the worker would write, it has written.
    worker.wait_deliveries_ended(1)
    assert client.get(f"/v1/jobs/{job_id}").json()["state"] == "cancelled"
    assert client.post("/v1/search", json={"query": "hotel Paris"}).json()["results"] == []


def test_a_long_job_says_how_many_of_its_chunks_are_embedded(
    deployment: Deployment,
    api: ApiServer,
) -> None:
    # One batch of 64 chunks at a time, two seconds each, as a slow local model runs.
    deployment.worker(
        RAGSAGE_ADAPTERS="tests.integration.adapters:flaky",
        TEST_EMBED_DELAY="2",
        TEST_EMBED_SERIAL="1",
        TEST_EMBED_COUNTER=str(deployment.tmp / "calls"),
        RAGSAGE_CHUNK_SIZE="48",
        RAGSAGE_CHUNK_OVERLAP="0",
    ).start()
    client = api.client(make_key(deployment.settings, ACME))
    sections = [
        f"## Clause {n}\n\n" + " ".join(f"term{n}x{word} applies" for word in range(6))
        for n in range(150)
    ]  # a chunk each: three batches
    job_id = upload(client, "contract.md", "\n\n".join(sections).encode()).json()["job_id"]
    seen: list[tuple[str | None, dict[str, int] | None]] = []
    deadline = time.monotonic() + 60
    while (job := client.get(f"/v1/jobs/{job_id}").json())["state"] in ("queued", "running"):
        seen.append((job["stage"], job["progress"]))
        assert time.monotonic() < deadline
        time.sleep(0.2)

    assert job["state"] == "succeeded" and job["progress"] is None
    chunks = job["result"]["chunks"]
    counts = [progress for stage, progress in seen if stage == "embed" and progress]
    # Part-way figures were shown, against the document's own number of chunks.
    assert {progress["total"] for progress in counts} == {chunks}
    done = [progress["done"] for progress in counts]
    assert done == sorted(done) and any(0 < count < chunks for count in done)
    assert all(progress is None for stage, progress in seen if stage != "embed")


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
