"""Requests that once answered 500 now answer a 4xx JSON error that names the problem.

Each case below was a 500 (or was silently accepted) on a live server; each is
sent here over real HTTP, to the app and, for what gunicorn itself refuses, to
``ragsage api``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragsage.core.keys import Role

from .api_harness import ApiServer, make_key
from .gunicorn_harness import raw_request, start_gunicorn
from .worker_harness import Deployment

NAMESPACE = "strict"


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] and error["message"]
    return error


@pytest.fixture
def admin(api: ApiServer, deployment: Deployment) -> httpx.Client:
    return api.client(make_key(deployment.settings, NAMESPACE, Role.ADMIN))


@pytest.mark.parametrize(
    ("path", "field"),
    [("/v1/search", "query"), ("/v1/query", "question"), ("/v1/documents", "filename")],
)
def test_deeply_nested_json_is_a_400(admin: httpx.Client, path: str, field: str) -> None:
    for depth in (40, 100_000):  # past the limit, and past Python's recursion limit
        body = f'{{"{field}": "x", "deep": {"[" * depth}{"]" * depth}}}'
        error = _error(
            admin.post(path, content=body, headers={"Content-Type": "application/json"}), 400
        )
        assert "nests deeper than 32 levels" in error["message"]


def test_nested_metadata_in_a_multipart_upload_is_a_400(admin: httpx.Client) -> None:
    reply = admin.post(
        "/v1/documents",
        files={"file": ("a.md", b"# A\n\nalpha\n", "text/markdown")},
        data={"metadata": "[" * 5000 + "]" * 5000},
    )
    assert "metadata nests deeper" in _error(reply, 400)["message"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/documents/%00"),
        ("DELETE", "/v1/documents/%00"),
        ("GET", "/v1/documents/a%0Ab"),
        ("GET", "/v1/jobs/%00"),
        ("POST", "/v1/jobs/%00/retry"),
        ("POST", "/v1/jobs/%00/cancel"),
        ("GET", "/v1/chunks/doc%00:1"),
    ],
)
def test_a_control_character_in_a_path_id_is_a_400(
    admin: httpx.Client, method: str, path: str
) -> None:
    assert "control character" in _error(admin.request(method, path), 400)["message"]


def test_an_overlong_path_id_is_a_400(admin: httpx.Client) -> None:
    assert "longer than 512" in _error(admin.get("/v1/documents/" + "a" * 600), 400)["message"]


def test_a_reindex_target_that_cannot_be_built_is_a_4xx(admin: httpx.Client) -> None:
    # {"dim": 2} once reached the hashing embedder's constructor and was a 500.
    error = _error(admin.post("/v1/reindex", json={"embedding_model": "m", "dim": 2}), 422)
    assert error["details"][0]["location"] == "dim"
    reply = admin.post("/v1/reindex", json={"embedding_model": "no-such-model"})
    assert "cannot re-index into hashing/no-such-model" in _error(reply, 400)["message"]
    # A catalog model wider than any index (3,072) was a ValueError, and a 500.
    wide = {"embedder": "openai", "embedding_model": "text-embedding-3-large"}
    assert "3072 dimensions" in _error(admin.post("/v1/reindex", json=wide), 422)["message"]


@pytest.mark.parametrize(
    ("path", "body", "location"),
    [
        ("/v1/query", {"question": "q", "stream": 0}, "stream"),
        ("/v1/query", {"question": "q", "options": {"rerank": 1}}, "options.rerank"),
        ("/v1/search", {"query": "q", "chunks_below": False}, "chunks_below"),
        ("/v1/search", {"query": "q", "top_k": "5"}, "top_k"),
        ("/v1/search", {"query": "q", "top_k": 2.5}, "top_k"),
        ("/v1/search", {"query": "q", "hybrid_alpha": "0.5"}, "hybrid_alpha"),
        ("/v1/search", {"query": "q", "filters": {"created_after": 0}}, "filters.created_after"),
        ("/v1/reindex", {"embedding_model": "m", "dim": True}, "dim"),
    ],
)
def test_a_value_of_the_wrong_json_type_is_refused(
    admin: httpx.Client, path: str, body: dict[str, Any], location: str
) -> None:
    error = _error(admin.post(path, json=body), 422)
    assert [detail["location"] for detail in error["details"]] == [location]


def test_json_types_the_schema_allows_are_accepted(admin: httpx.Client) -> None:
    # JSON Schema counts 3.0 as an integer and 1 as a number.
    reply = admin.post(
        "/v1/search",
        json={
            "query": "q",
            "top_k": 3.0,
            "hybrid_alpha": 1,
            "filters": {"created_after": "2024-01-01T00:00:00Z"},
        },
    )
    assert reply.status_code == 200, reply.text


def test_an_empty_external_id_is_refused_not_taken_for_none(admin: httpx.Client) -> None:
    multipart = admin.post(
        "/v1/documents",
        files={"file": ("a.md", b"# A\n\nalpha\n", "text/markdown")},
        data={"external_id": ""},
    )
    assert _error(multipart, 422)["details"][0]["location"] == "external_id"
    as_json = admin.post(
        "/v1/documents",
        json={
            "filename": "a.md",
            "content_base64": base64.b64encode(b"# A\n\nalpha\n").decode(),
            "external_id": "",
        },
    )
    assert _error(as_json, 422)["details"][0]["location"] == "external_id"
    assert admin.get("/v1/documents").json()["documents"] == []


def test_what_gunicorn_refuses_answers_the_api_json_error(
    deployment: Deployment, tmp_path: Path
) -> None:
    server = start_gunicorn(deployment.env, tmp_path / "gunicorn.log", workers=1, threads=2)
    try:
        cases = {
            414: b"GET /v1/sources?q=" + b"a" * 6000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            431: b"GET /v1/sources HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n",
            400: b"NOT A REQUEST LINE\r\n\r\n",
        }
        many = b"".join(b"X-H%d: v\r\n" % n for n in range(150))
        for status, request in [
            *cases.items(),
            (431, b"GET / HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"),
        ]:
            got, headers, body = raw_request(server.port, request)
            assert got == status, (status, body[:300])
            assert headers["content-type"] == "application/json"
            error = json.loads(body)["error"]
            assert error["code"] and error["message"]
        # A refused request does not harm the server.
        assert httpx.get(f"{server.url}/healthz").status_code == 200
    finally:
        server.stop()
