"""How the HTTP backend reports what the API answered; the happy path runs in test_mcp.py.

httpx's own MockTransport stands in for the server here so that failures a live API
rarely produces (5xx, a non-JSON body, a dropped connection) can be shown too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import pytest

from ragsage.agent.http_backend import (
    ApiClientError,
    ApiKeyRefused,
    ApiUnreachable,
    HttpToolBackend,
)
from ragsage.agent.tools import build_tools
from ragsage.core.errors import InvalidRequest

KEY = "rsk_live_very_secret_key"


def error(status: int, code: str, message: str, **extra: object) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message, **extra}})


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[httpx.Request], httpx.Response]], HttpToolBackend]]:
    made: list[HttpToolBackend] = []

    def make(handler: Callable[[httpx.Request], httpx.Response]) -> HttpToolBackend:
        backend = HttpToolBackend(
            "http://rag.example:8000/", KEY, transport=httpx.MockTransport(handler)
        )
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


def chunk(chunk_id: str, text: str) -> dict[str, object]:
    return {
        "id": chunk_id,
        "document_id": "d1",
        "ordinal": 0,
        "text": text,
        "source": "guide.md",
        "title": "Guide",
        "heading_path": ["Setup"],
        "page_numbers": [],
        "metadata": {},
        "created_at": None,
    }


def test_search_sends_the_key_and_numbers_the_results(
    serve: Callable[..., HttpToolBackend],
) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        hits = [
            {"chunk": chunk(f"c{n}", f"text {n}"), "score": 1.0 / n, "above": [], "below": []}
            for n in (1, 2)
        ]
        return httpx.Response(
            200, json={"query": "setup", "total_found": 7, "results": hits, "timing_ms": {}}
        )

    found = serve(handler).tool_search("setup", top_k=2, rerank=True)
    assert seen[0].headers["Authorization"] == f"Bearer {KEY}"
    assert seen[0].url.path == "/v1/search"
    assert json.loads(seen[0].content) == {"query": "setup", "top_k": 2, "rerank": True}
    assert found["total_found"] == 7
    assert [(r["citation"], r["chunk_id"], r["title"]) for r in found["results"]] == [
        (1, "c1", "Guide"),
        (2, "c2", "Guide"),
    ]


def test_fetch_chunk_escapes_the_id_and_maps_the_neighbours(
    serve: Callable[..., HttpToolBackend],
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.raw_path == b"/v1/chunks/a%2Fb%3F?above=1&below=0"
        return httpx.Response(
            200,
            json={"chunk": chunk("a/b?", "middle"), "above": [chunk("z", "before")], "below": []},
        )

    found = serve(handler).tool_fetch_chunk("a/b?", chunks_above=1, chunks_below=0)
    assert found is not None
    assert found["text"] == "middle"
    assert found["context_above"] == [{"chunk_id": "z", "text": "before"}]
    assert found["context_below"] == []


def test_an_unknown_chunk_is_none(serve: Callable[..., HttpToolBackend]) -> None:
    backend = serve(lambda request: error(404, "not_found", "no chunk 'x'"))
    assert backend.tool_fetch_chunk("x", chunks_above=0, chunks_below=0) is None


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "the API key is not valid or has been revoked"),
        (403, "this needs a key with the read role"),
    ],
)
def test_a_refused_key_says_so_without_showing_it(
    serve: Callable[..., HttpToolBackend], status: int, message: str
) -> None:
    backend = serve(lambda request: error(status, "unauthorized", message))
    with pytest.raises(ApiKeyRefused) as caught:
        backend.check()
    assert str(caught.value) == (
        f"the API key was refused by the ragsage API at http://rag.example:8000: {message}"
    )
    assert KEY not in str(caught.value)


def test_a_rejected_request_carries_the_apis_reason(serve: Callable[..., HttpToolBackend]) -> None:
    details = [{"location": "query", "message": "String should have at most 8000 characters"}]
    backend = serve(
        lambda request: error(
            422, "invalid_request", "the request body is not valid", details=details
        )
    )
    with pytest.raises(InvalidRequest) as caught:
        backend.tool_search("x", top_k=5, rerank=False)
    assert str(caught.value) == (
        "the ragsage API rejected the request: the request body is not valid"
        " (query: String should have at most 8000 characters)"
    )


def test_a_server_failure_is_reported_and_marked_retryable(
    serve: Callable[..., HttpToolBackend],
) -> None:
    backend = serve(lambda request: error(503, "unavailable", "the database is unavailable; retry"))
    with pytest.raises(ApiClientError) as caught:
        backend.tool_list_sources()
    assert str(caught.value) == (
        "the ragsage API at http://rag.example:8000 failed:"
        " the database is unavailable; retry (HTTP 503)"
    )
    assert caught.value.retryable


def test_something_that_is_not_the_api_is_named(serve: Callable[..., HttpToolBackend]) -> None:
    backend = serve(lambda request: httpx.Response(200, text="<html>hello</html>"))
    with pytest.raises(ApiClientError, match="something other than JSON; is it a ragsage API"):
        backend.tool_list_sources()


def test_a_dropped_connection_is_unreachable(serve: Callable[..., HttpToolBackend]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ApiUnreachable) as caught:
        serve(handler).check()
    assert str(caught.value) == (
        "cannot reach ragsage API at http://rag.example:8000 (ConnectError)"
    )


def test_credentials_in_the_url_stay_out_of_messages() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with HttpToolBackend(
        "http://user:pa55word@rag.example:8000", KEY, transport=httpx.MockTransport(handler)
    ) as backend:
        with pytest.raises(ApiUnreachable) as caught:
            backend.check()
    assert "pa55word" not in str(caught.value)
    assert "http://rag.example:8000" in str(caught.value)


def test_through_the_tools_a_refused_key_is_an_error_payload(
    serve: Callable[..., HttpToolBackend],
) -> None:
    backend = serve(lambda request: error(401, "unauthorized", "the API key is not valid"))
    search = build_tools(backend)[0]
    payload = json.loads(search({"query": "setup"}))
    assert payload["error"].startswith("the API key was refused")
    assert KEY not in payload["error"]


def test_an_empty_key_is_refused_before_any_request() -> None:
    with pytest.raises(InvalidRequest, match="an API key is required"):
        HttpToolBackend("http://rag.example", "  ")
