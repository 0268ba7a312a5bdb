"""Schema-driven fuzzing: schemathesis generates requests from /openapi.json.

Every response to a generated request must be a non-5xx reply the published
schema allows: a documented status code, content type and body shape.  The
requests travel over real HTTP to the served app, with a read, a write and an
admin key, against a namespace that holds ingested documents: a generated
request names, some of the time, a document, job or chunk that exists, pages
with a cursor the API really issued, or re-indexes into a model that can be built.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig
from schemathesis.core.result import Ok
from schemathesis.errors import FailureGroup

from ragsage.core.keys import Role

from .api_harness import ApiServer, make_key
from .worker_harness import Deployment

NAMESPACE = "fuzz"
# Generated cases per operation and per key: about 20 operations x 4 keys, plus a
# restricted key on the few it may call, x this many requests (plus the auth
# probes schemathesis sends after a 2xx) stays well inside two minutes on a
# two-core machine.
MAX_EXAMPLES = 9
DOCUMENTS = {
    f"valve-{n}.md": (
        f"# Valve {n} manual\n\n## Pressure\n\nValve {n} holds pressure up to {100 + n} bar "
        f"at the inlet.\n\n## Maintenance\n\nReplace the seal of valve {n} every {n + 1} "
        "years, or sooner after a leak.\n"
    ).encode()
    for n in range(4)
}
# The path parameters that name a stored resource; each (like a paging cursor
# and a re-index target model) gets an existing value in about half the cases.
PATH_IDS = ("document_id", "job_id", "chunk_id")
# Which embedding models exist is the provider's business, and which widths are
# indexed the operator's: neither is something the schema can list.  A re-index
# into a model the embedder cannot build (400, naming the model) or into a width
# this deployment has no index for (422, naming those it has) is a schema-valid
# request the server rightly refuses.
CONFIG = """
[[operations]]
include-path = "/v1/reindex"
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = [
    "2XX", "400", "401", "403", "404", "409", "422"
]
"""


def _ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (
        f"{response.request.method} {response.request.url} -> "
        f"{response.status_code}: {response.text[:2000]}"
    )
    return response.json()


def _seed(client: httpx.Client, deployment: Deployment) -> None:
    """Upload the documents and ingest them with a real worker (left running)."""
    job_ids = []
    for filename, data in DOCUMENTS.items():
        payload = {"filename": filename, "content_base64": base64.b64encode(data).decode()}
        job_ids.append(_ok(client.post("/v1/documents", json=payload), 202)["job_id"])
    deployment.worker().start(pool="solo")
    jobs = deployment.wait(NAMESPACE, job_ids)
    assert all(job.state.value == "succeeded" for job in jobs.values()), jobs


def _existing(client: httpx.Client, admin: httpx.Client) -> dict[str, list[Any]]:
    """What exists in the namespace now (fuzzed requests upload, retry and delete)."""
    documents = _ok(client.get("/v1/documents", params={"limit": 200}))["documents"]
    jobs = _ok(client.get("/v1/jobs", params={"limit": 200}))["jobs"]
    document_cursor = _ok(client.get("/v1/documents", params={"limit": 1}))["next_cursor"]
    job_cursor = _ok(client.get("/v1/jobs", params={"limit": 1}))["next_cursor"]
    found = _ok(client.post("/v1/search", json={"query": "valve pressure seal", "top_k": 20}))
    generations = _ok(admin.get("/v1/reindex"))["generations"]
    document_ids = [d["id"] for d in documents]
    job_ids = [j["id"] for j in jobs]
    models = {(g["embedder"], g["embedding_model"]) for g in generations}
    return {
        "document_id": document_ids,
        "job_id": job_ids,
        "chunk_id": sorted({result["chunk"]["id"] for result in found["results"]}),
        # A cursor is the last id of a page: the issued one, and any stored id.
        "GET /v1/documents cursor": [c for c in [document_cursor] if c] + document_ids,
        "GET /v1/jobs cursor": [c for c in [job_cursor] if c] + job_ids,
        # Models this deployment can embed with: the namespace's, and another width.
        "reindex target": sorted(models | {("hashing", "ragsage-hashing-128")}),
    }


def _destructive_last(operation: Any) -> tuple[bool, str, str]:
    # Deleting documents (and with them their chunks and jobs) runs after every
    # other operation has had the seeded namespace to work on.
    return (operation.method.upper() == "DELETE", operation.path, operation.method)


def _fuzz(
    operation: Any, key: str, existing: dict[str, list[Any]], label: str, failures: list[str]
) -> int:
    """Send generated requests for one operation with one key; how many were sent.

    A failure (shrunk by hypothesis) is added to ``failures`` rather than raised,
    so one run reports every operation and key that fails, not only the first.
    """
    headers = {"Authorization": f"Bearer {key}"}
    sent = 0

    @given(case=operation.as_strategy(), data=st.data())
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def exercise(case: Any, data: st.DataObject) -> None:
        nonlocal sent
        for name in PATH_IDS:
            if name not in case.path_parameters or not existing[name]:
                continue
            if data.draw(st.booleans()):
                chosen = data.draw(st.sampled_from(existing[name]), label=name)
                case.path_parameters = {**case.path_parameters, name: chosen}
        cursors = existing.get(f"{case.method.upper()} {case.path} cursor")
        if cursors and data.draw(st.booleans()):
            chosen = data.draw(st.sampled_from(cursors), label="cursor")
            case.query = {**case.query, "cursor": chosen}
        body = case.body
        if isinstance(body, dict) and "embedding_model" in body and data.draw(st.booleans()):
            embedder, model = data.draw(st.sampled_from(existing["reindex target"]), label="model")
            body = {k: v for k, v in body.items() if k != "dim"}
            case.body = {**body, "embedder": embedder, "embedding_model": model}
        response = case.call(headers=headers)
        sent += 1
        assert response.status_code < 500, (
            f"{label}: {case.method} {case.formatted_path} query={case.query!r} "
            f"body={case.body!r} -> {response.status_code}: {response.text[:2000]}\n"
            f"Reproduce with: {case.as_curl_command(headers=headers)}"
        )
        case.validate_response(response, headers=headers)

    try:
        exercise()
    # FailureGroup, schemathesis' failed checks, is a BaseExceptionGroup.
    except (Exception, FailureGroup) as exc:  # noqa: BLE001 - reported with the others
        failures.append(f"{label}:\n{_describe(exc)}")
    return sent


# The routes where a delegate key does what no write key may.
DELEGATE_ROUTES = ("/v1/restricted-keys", "/v1/key")
# The routes a restricted key with filters may call (api.auth); elsewhere it is refused.
RESTRICTED_ROUTES = ("/v1/search", "/v1/query", "/v1/chunks/", "/v1/sources", "/v1/key")


def _describe(exc: BaseException) -> str:
    """The failure's message, its notes (the falsifying example) and its sub-failures'."""
    parts = [f"{type(exc).__name__}: {exc}", *getattr(exc, "__notes__", [])]
    if isinstance(exc, BaseExceptionGroup):
        parts += [_describe(inner) for inner in exc.exceptions]
    return "\n".join(parts)


def test_no_generated_request_gets_a_5xx_or_an_undocumented_reply(
    api: ApiServer, deployment: Deployment
) -> None:
    keys = {role: make_key(deployment.settings, NAMESPACE, role) for role in Role}
    # The delegate key also fuzzes the restricted-key routes, which answer it alone.
    assert set(keys) == {Role.READ, Role.WRITE, Role.DELEGATE, Role.ADMIN}
    writer, admin = api.client(keys[Role.WRITE]), api.client(keys[Role.ADMIN])
    _seed(writer, deployment)
    # A restricted key a product hands its user: bound, filtered, read-only.
    issued = api.client(keys[Role.DELEGATE]).post(
        "/v1/restricted-keys",
        json={
            "principals": ["user:fuzz"],
            "expires_in": 3600,
            "filters": {"sources": ["valve-1.md", "valve-2.md"]},
        },
    )
    restricted = _ok(issued, 201)["key"]
    seeded = _existing(writer, admin)
    assert len(seeded["document_id"]) == len(DOCUMENTS), seeded
    assert len(seeded["job_id"]) == len(DOCUMENTS), seeded
    assert seeded["chunk_id"], seeded
    assert seeded["GET /v1/documents cursor"][0] and seeded["GET /v1/jobs cursor"][0], seeded

    schema = schemathesis.openapi.from_url(
        f"{api.url}/openapi.json", config=SchemathesisConfig.from_str(CONFIG)
    )
    results = list(schema.get_all_operations())
    assert all(isinstance(result, Ok) for result in results), results
    operations = sorted(
        (result.ok() for result in results if isinstance(result, Ok)), key=_destructive_last
    )
    assert len(operations) >= 14
    sent: dict[str, int] = {}
    failures: list[str] = []
    kinds = [(role.value, key) for role, key in keys.items()] + [("restricted", restricted)]
    for operation in operations:
        for kind, key in kinds:
            if kind == "delegate" and not operation.path.startswith(DELEGATE_ROUTES):
                continue  # elsewhere a delegate key is a write key, fuzzed as one
            if kind == "restricted" and not operation.path.startswith(RESTRICTED_ROUTES):
                continue  # refused with 403 before anything else: test_restricted_keys.py
            label = f"{operation.method.upper()} {operation.path} [{kind} key]"
            # Refreshed each time: fuzzed uploads add documents, deletes remove them.
            sent[label] = _fuzz(operation, key, _existing(writer, admin), label, failures)

    print(f"fuzzed {sum(sent.values())} requests over {len(sent)} operation/key pairs")
    assert not failures, f"{len(failures)} operation/key pairs failed:\n\n" + "\n\n".join(failures)
    delegated = sum(1 for operation in operations if operation.path.startswith(DELEGATE_ROUTES))
    assert delegated == 3
    restricted_on = sum(1 for o in operations if o.path.startswith(RESTRICTED_ROUTES))
    assert restricted_on >= 5
    expected = len(operations) * (len(keys) - 1) + delegated + restricted_on
    assert len(sent) == expected and all(sent.values()), sent
