"""One JSON error handler for the whole API; nothing internal ever reaches a client."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from flask import Flask, Response, jsonify
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException

from ragsage.errors import (
    ConfigurationError,
    DocumentError,
    InputError,
    ProviderError,
    RagsageError,
    StorageError,
)
from ragsage.storage.generations import EmbeddingModelMismatch

_log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error with its HTTP status and a message meant for the client."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
) -> Response:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    response = jsonify({"error": body})
    response.status_code = status
    return response


def _validation(exc: ValidationError) -> Response:
    details = [
        {"location": ".".join(str(part) for part in error["loc"]), "message": error["msg"]}
        for error in exc.errors(include_url=False, include_input=False)
    ]
    return error_response(422, "invalid_request", "the request body is not valid", details)


def _ragsage(exc: RagsageError) -> Response:
    if isinstance(exc, EmbeddingModelMismatch):
        return error_response(409, "embedding_model_mismatch", str(exc))
    if isinstance(exc, DocumentError):
        return error_response(422, "unreadable_document", str(exc))
    if isinstance(exc, InputError):
        status = 413 if "upload limit" in str(exc) else 400
        return error_response(status, "invalid_request", str(exc))
    if isinstance(exc, ProviderError):
        code = "provider_unavailable" if exc.retryable else "provider_error"
        return error_response(503 if exc.retryable else 502, code, "a model provider failed")
    if isinstance(exc, StorageError):
        if exc.retryable:
            return error_response(503, "unavailable", "the database is unavailable; retry")
        return _internal(exc)
    if isinstance(exc, ConfigurationError):
        _log.error("configuration error: %s", exc)
        return error_response(503, "misconfigured", "the service is misconfigured")
    return _internal(exc)


def _internal(exc: BaseException) -> Response:
    reference = uuid.uuid4().hex[:12]
    _log.exception("unhandled error (reference %s)", reference, exc_info=exc)
    return error_response(500, "internal_error", f"internal error (reference {reference})")


def register_error_handlers(app: Flask) -> None:
    """Map every failure to a JSON body ``{"error": {"code", "message"}}``."""

    @app.errorhandler(ApiError)
    def api_error(exc: ApiError) -> Response:
        return error_response(exc.status, exc.code, exc.message)

    @app.errorhandler(ValidationError)
    def validation(exc: ValidationError) -> Response:
        return _validation(exc)

    @app.errorhandler(RagsageError)
    def ragsage_error(exc: RagsageError) -> Response:
        return _ragsage(exc)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = (exc.name or "error").lower().replace(" ", "_")
        return error_response(exc.code or 500, code, exc.description or exc.name)

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        return _internal(exc)
