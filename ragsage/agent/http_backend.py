"""A :class:`~ragsage.agent.tools.ToolBackend` that asks a running ragsage API over HTTP.

Failures become ragsage errors with a message a person can act on (the tools turn
them into ``{"error": ...}`` payloads): a refused key, an unreachable server, or the
API's own explanation of a rejected request.  The API key goes into the
``Authorization`` header and nowhere else: not into messages, not into logs.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from ragsage import __version__
from ragsage.core.errors import InvalidRequest, RagsageError
from ragsage.core.urls import without_credentials


class ApiClientError(RagsageError):
    """The ragsage API could not serve a tool call."""


class ApiKeyRefused(ApiClientError):
    """The API answered 401 or 403: the key is unknown, revoked or lacks the read role."""


class ApiUnreachable(ApiClientError):
    """No answer from the API: wrong address, server down, or a timeout."""

    retryable = True


class HttpToolBackend:
    """The retrieval tools' backend over ``/v1/search``, ``/v1/chunks`` and ``/v1/sources``.

    ``transport`` replaces httpx's network transport (a proxy, or a test double).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not api_key.strip():
            raise InvalidRequest("an API key is required to call the ragsage API")
        self.base_url = base_url.rstrip("/")
        self._shown_url = without_credentials(self.base_url)
        self._client = httpx.Client(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers={
                "Authorization": f"Bearer {api_key.strip()}",
                "User-Agent": f"ragsage-agent/{__version__}",
            },
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpToolBackend:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def check(self) -> None:
        """Raise unless the API is reachable and accepts the key for reading."""
        self._request("GET", "/v1/sources")

    def tool_search(self, query: str, *, top_k: int, rerank: bool) -> dict[str, Any]:
        body = self._request(
            "POST", "/v1/search", json={"query": query, "top_k": top_k, "rerank": rerank}
        )
        return {
            "query": body["query"],
            "total_found": body["total_found"],
            "results": [
                _search_result(number, hit) for number, hit in enumerate(body["results"], start=1)
            ],
        }

    def tool_fetch_chunk(
        self, chunk_id: str, *, chunks_above: int, chunks_below: int
    ) -> dict[str, Any] | None:
        body = self._request(
            "GET",
            f"/v1/chunks/{quote(chunk_id, safe='')}",
            params={"above": chunks_above, "below": chunks_below},
            missing_ok=True,
        )
        if body is None:
            return None
        chunk = body["chunk"]
        return {
            "chunk_id": chunk["id"],
            "document_id": chunk["document_id"],
            "source": chunk["source"],
            "title": chunk["title"],
            "heading_path": chunk["heading_path"],
            "sections": _section_names(chunk),
            "text": chunk["text"],
            "context_above": [_neighbour(c) for c in body["above"]],
            "context_below": [_neighbour(c) for c in body["below"]],
        }

    def tool_list_sources(self) -> list[str]:
        body = self._request("GET", "/v1/sources")
        return [str(source) for source in body["sources"]]

    def _request(self, method: str, path: str, *, missing_ok: bool = False, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise ApiUnreachable(
                f"the ragsage API at {self._shown_url} did not answer in time"
            ) from exc
        except httpx.HTTPError as exc:
            raise ApiUnreachable(
                f"cannot reach ragsage API at {self._shown_url} ({type(exc).__name__})"
            ) from exc
        if response.status_code == 404 and missing_ok:
            return None
        if response.is_success:
            try:
                return response.json()
            except ValueError as exc:
                raise ApiClientError(
                    f"{self._shown_url} answered {path} with something other than JSON;"
                    " is it a ragsage API?"
                ) from exc
        reason = _reason(response)
        if response.status_code in (401, 403):
            raise ApiKeyRefused(
                f"the API key was refused by the ragsage API at {self._shown_url}: {reason}"
            )
        if response.is_client_error:
            raise InvalidRequest(f"the ragsage API rejected the request: {reason}")
        error = ApiClientError(
            f"the ragsage API at {self._shown_url} failed: {reason} (HTTP {response.status_code})"
        )
        error.retryable = response.status_code in (502, 503, 504)
        raise error


def _search_result(number: int, hit: dict[str, Any]) -> dict[str, Any]:
    chunk = hit["chunk"]
    return {
        "citation": number,
        "chunk_id": chunk["id"],
        "document_id": chunk["document_id"],
        "source": chunk["source"],
        "title": chunk["title"],
        "heading_path": chunk["heading_path"],
        "sections": _section_names(chunk),
        "score": hit["score"],
        "text": chunk["text"],
    }


def _section_names(chunk: dict[str, Any]) -> list[str]:
    return [" > ".join(section["heading_path"]) for section in chunk.get("sections") or ()]


def _neighbour(chunk: dict[str, Any]) -> dict[str, Any]:
    return {"chunk_id": chunk["id"], "text": chunk["text"]}


def _reason(response: httpx.Response) -> str:
    """The API's own explanation from its ``{"error": {"message", "details"}}`` body."""
    try:
        error = response.json()["error"]
        message = str(error["message"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code} {response.reason_phrase}".strip()
    details = error.get("details") or []
    parts = [
        f"{item.get('location', '?')}: {item.get('message', '')}"
        for item in details
        if isinstance(item, dict)
    ]
    return f"{message} ({'; '.join(parts)})" if parts else message
