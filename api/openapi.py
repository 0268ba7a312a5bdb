"""The OpenAPI 3.1 document, built from the same models that validate requests."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

from api import schemas
from api.schemas import (
    MAX_CURSOR_CHARS,
    MAX_NAME_FILTER_CHARS,
    MAX_PATH_ID_CHARS,
    PATH_ID_PATTERN,
)
from ragsage.query.options import MAX_EXPANSION

_BODY_MODELS: tuple[type[BaseModel], ...] = (
    schemas.ReindexRequest,
    schemas.RollbackRequest,
    schemas.SearchRequest,
    schemas.QueryRequest,
    schemas.DocumentUpload,
)
_RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    schemas.SearchResponse,
    schemas.QueryResponse,
    schemas.ChunkResponse,
    schemas.SourcesResponse,
    schemas.DocumentOut,
    schemas.DocumentList,
    schemas.UploadResponse,
    schemas.JobOut,
    schemas.JobList,
    schemas.ErrorResponse,
    schemas.Health,
    schemas.ReindexStatus,
    schemas.ReindexStarted,
    schemas.ActiveGeneration,
    schemas.DroppedGenerations,
)


# Each Server-Sent Event: its name, and a JSON payload in ``data``.
_SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": ["token", "citations", "done", "error"]},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(model)}}


_RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before retrying (a dependency is down)",
        "schema": {"type": "integer", "minimum": 1},
    }
}


def _errors(*statuses: int) -> dict[str, Any]:
    responses: dict[str, Any] = {
        str(s): {"description": "error", "content": _json(schemas.ErrorResponse)} for s in statuses
    }
    if "503" in responses:
        responses["503"]["headers"] = _RETRY_AFTER
    return responses


def _op(
    summary: str,
    ok: dict[str, Any],
    *,
    body: type[BaseModel] | None = None,
    errors: tuple[int, ...] = (400, 401, 403, 404, 413, 415, 422, 503),
    secured: bool = True,
    parameters: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": summary, "responses": {**ok, **_errors(*errors)}}
    if body is not None:
        operation["requestBody"] = {"required": True, "content": _json(body)}
    if secured:
        operation["security"] = [{"apiKey": []}]
    if parameters:
        operation["parameters"] = parameters
    return operation


def _path_param(name: str) -> dict[str, Any]:
    schema = {"type": "string", "maxLength": MAX_PATH_ID_CHARS, "pattern": PATH_ID_PATTERN}
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _query_int(name: str, low: int, high: int) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": low, "maximum": high},
    }


def _cursor(max_length: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    if max_length is not None:
        # A keyset cursor is a stored id: bounded, and never holding a NUL.
        schema.update(maxLength=max_length, pattern="^[^\\x00]*$")
    return {"name": "cursor", "in": "query", "required": False, "schema": schema}


def _ok(model: type[BaseModel], status: int = 200) -> dict[str, Any]:
    return {str(status): {"description": "success", "content": _json(model)}}


@cache
def _components() -> dict[str, Any]:
    definitions: dict[str, Any] = {}
    for model in (*_BODY_MODELS, *_RESPONSE_MODELS):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        definitions.update(schema.pop("$defs", {}))
        definitions[model.__name__] = schema
    return definitions


def openapi_document(server_url: str = "") -> dict[str, Any]:
    """The whole API as OpenAPI 3.1."""
    job_states = {
        "type": "string",
        "enum": ["queued", "running", "succeeded", "failed", "cancelled", "superseded"],
    }
    paths: dict[str, Any] = {
        "/v1/search": {
            "post": _op(
                "Ranked passages for a query",
                _ok(schemas.SearchResponse),
                body=schemas.SearchRequest,
            )
        },
        "/v1/query": {
            "post": _op(
                "A cited answer (JSON, or Server-Sent Events with stream=true)",
                {
                    "200": {
                        "description": "the answer",
                        "content": {
                            **_json(schemas.QueryResponse),
                            "text/event-stream": {"schema": _SSE_EVENT},
                        },
                    }
                },
                body=schemas.QueryRequest,
            )
        },
        "/v1/chunks/{chunk_id}": {
            "get": _op(
                "A chunk and its neighbours",
                _ok(schemas.ChunkResponse),
                parameters=[
                    _path_param("chunk_id"),
                    _query_int("above", 0, MAX_EXPANSION),
                    _query_int("below", 0, MAX_EXPANSION),
                ],
            )
        },
        "/v1/sources": {
            "get": _op("The namespace's document sources", _ok(schemas.SourcesResponse))
        },
        "/v1/documents": {
            "post": {
                **_op(
                    "Upload a document for ingestion",
                    {**_ok(schemas.UploadResponse, 202), **_ok(schemas.UploadResponse, 200)},
                    body=schemas.DocumentUpload,
                ),
                "requestBody": {
                    "required": True,
                    "content": {
                        **_json(schemas.DocumentUpload),
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "required": ["file"],
                                "properties": {
                                    "file": {"type": "string", "format": "binary", "minLength": 1},
                                    "metadata": {
                                        "type": "object",
                                        "additionalProperties": {
                                            "type": ["string", "integer", "number", "boolean"]
                                        },
                                    },
                                    "external_id": {
                                        "type": "string",
                                        "minLength": 1,
                                        "maxLength": 512,
                                    },
                                },
                            },
                            "encoding": {"metadata": {"contentType": "application/json"}},
                        },
                    },
                },
            },
            "get": _op(
                "Documents, newest first (with name: those whose file name or title holds it)",
                _ok(schemas.DocumentList),
                parameters=[
                    _query_int("limit", 1, 200),
                    _cursor(MAX_CURSOR_CHARS),
                    {
                        "name": "name",
                        "in": "query",
                        "required": False,
                        "schema": {
                            "type": "string",
                            "maxLength": MAX_NAME_FILTER_CHARS,
                            "pattern": "^[^\\x00]*$",
                        },
                    },
                ],
            ),
        },
        "/v1/documents/{document_id}": {
            "get": _op(
                "One document", _ok(schemas.DocumentOut), parameters=[_path_param("document_id")]
            ),
            "delete": _op(
                "Delete a document, its chunks, bytes and jobs",
                {"204": {"description": "deleted"}},
                parameters=[_path_param("document_id")],
            ),
        },
        "/v1/jobs": {
            "get": _op(
                "Ingestion jobs, newest first",
                _ok(schemas.JobList),
                parameters=[
                    _query_int("limit", 1, 200),
                    _cursor(),
                    {"name": "state", "in": "query", "required": False, "schema": job_states},
                ],
            )
        },
        "/v1/jobs/{job_id}": {
            "get": _op("One job", _ok(schemas.JobOut), parameters=[_path_param("job_id")])
        },
        "/v1/jobs/{job_id}/cancel": {
            "post": _op(
                "Cancel a queued or running job",
                _ok(schemas.JobOut),
                parameters=[_path_param("job_id")],
                errors=(400, 401, 403, 404, 409, 503),
            )
        },
        "/v1/jobs/{job_id}/retry": {
            "post": _op(
                "Retry a failed or cancelled job",
                _ok(schemas.JobOut, 202),
                parameters=[_path_param("job_id")],
                errors=(400, 401, 403, 404, 409, 503),
            )
        },
        "/v1/reindex": {
            "post": _op(
                "Re-index the namespace into another embedding model (admin)",
                _ok(schemas.ReindexStarted, 202),
                body=schemas.ReindexRequest,
                errors=(400, 401, 403, 409, 413, 415, 422, 503),
            ),
            "get": _op(
                "Embedding generations and re-index progress (admin)", _ok(schemas.ReindexStatus)
            ),
        },
        "/v1/reindex/rollback": {
            "post": _op(
                "Undo the last switch, or abandon a building re-index (admin); refused with "
                "the count of documents the previous generation lacks, unless forced",
                _ok(schemas.ActiveGeneration),
                body=schemas.RollbackRequest,
                errors=(400, 401, 403, 409, 413, 415, 422, 503),
            )
        },
        "/v1/reindex/drop-previous": {
            "post": _op(
                "Delete the retired generations and their vectors (admin)",
                _ok(schemas.DroppedGenerations),
                errors=(401, 403, 503),
            )
        },
        "/v1/reindex/{generation}/activate": {
            "post": _op(
                "Switch to a held, complete generation: a gate's approval (admin)",
                _ok(schemas.ActiveGeneration),
                parameters=[
                    {
                        "name": "generation",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer", "minimum": 0},
                    }
                ],
                errors=(401, 403, 404, 409, 503),
            )
        },
        "/healthz": {"get": _op("Liveness", _ok(schemas.Health), secured=False, errors=())},
        "/readyz": {
            "get": _op(
                "Readiness: database and broker",
                {
                    **_ok(schemas.Health),
                    "503": {"description": "not ready", "content": _json(schemas.Health)},
                },
                secured=False,
                errors=(),
            )
        },
    }
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "ragsage",
            "version": "1",
            "description": "Cited answers over your documents.",
        },
        "paths": paths,
        "components": {
            "schemas": _components(),
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
        },
    }
    if server_url:
        document["servers"] = [{"url": server_url}]
    return document
