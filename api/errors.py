"""One JSON error handler for the whole API; nothing internal ever reaches a client."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from flask import Flask, Response, jsonify
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException

from ragsage.core.errors import (
    BrokerUnavailable,
    ConfigurationError,
    Conflict,
    DocumentError,
    Forbidden,
    InputError,
    NotFound,
    ProviderError,
    QuotaExceeded,
    RagsageError,
    RetryableProviderError,
    StorageError,
    StorageTimeout,
    UnsupportedWidth,
    UploadTooLarge,
    causes,
    client_message,
)
from ragsage.core.generations import EmbeddingModelMismatch
from ragsage.runtime.serving import storage_failure

_log = logging.getLogger(__name__)
# How long a client should wait before retrying after a dependency outage: long
# enough for a restarted Postgres or Redis to accept connections again.
RETRY_AFTER_SECONDS = 5


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


def unavailable(
    message: str, retry_after: float = RETRY_AFTER_SECONDS, code: str = "unavailable"
) -> Response:
    """503 for a dependency that is down: the client should retry after a pause."""
    response = error_response(503, code, message)
    response.headers["Retry-After"] = str(max(1, round(retry_after)))
    return response


def outage(exc: BaseException, named: RagsageError | None = None) -> str | None:
    """What ``exc`` says is unavailable: "database", "broker", "timeout" or None.

    The chain of causes is searched for the error tree's outage errors, and so
    is ``named``: the Postgres adapter's name for a driver's error still in the
    chain (:func:`~ragsage.runtime.serving.storage_failure`).
    """
    for cause in [*causes(exc), *([named] if named is not None else [])]:
        if isinstance(cause, StorageTimeout):
            return "timeout"
        if isinstance(cause, BrokerUnavailable):
            return "broker"
        if isinstance(cause, StorageError) and cause.retryable:
            return "database"
    return None


def _outage_response(which: str) -> Response:
    _log.warning("answering 503: the %s is unavailable", which)
    if which == "database":
        return unavailable("the database is unavailable; retry shortly")
    if which == "broker":
        return unavailable("the job queue is unavailable; retry shortly")
    return unavailable("the request did not finish in time; retry shortly")


def _validation(exc: ValidationError) -> Response:
    details = [
        {"location": ".".join(str(part) for part in error["loc"]), "message": error["msg"]}
        for error in exc.errors(include_url=False, include_input=False)
    ]
    return error_response(422, "invalid_request", "the request body is not valid", details)


# Errors a client reads as they are, by the first class that matches (subclasses first).
_ANSWERED: tuple[tuple[type[RagsageError], int, str], ...] = (
    (EmbeddingModelMismatch, 409, "embedding_model_mismatch"),
    (DocumentError, 422, "unreadable_document"),
    (Conflict, 409, "conflict"),
    (NotFound, 404, "not_found"),
    (QuotaExceeded, 403, "quota_exceeded"),
    (Forbidden, 403, "forbidden"),
    (UnsupportedWidth, 422, "unsupported_width"),
    (UploadTooLarge, 413, "too_large"),
    (InputError, 400, "invalid_request"),
)


def _ragsage(exc: RagsageError) -> Response:
    for kind, status, code in _ANSWERED:
        if isinstance(exc, kind):
            return error_response(status, code, str(exc))
    if isinstance(exc, RetryableProviderError):
        wait = exc.retry_after or RETRY_AFTER_SECONDS
        return unavailable("a model provider failed", wait, code="provider_unavailable")
    if isinstance(exc, ProviderError):
        return error_response(502, "provider_error", "a model provider failed")
    if isinstance(exc, StorageError | BrokerUnavailable):
        which = outage(exc, storage_failure(exc))
        return _outage_response(which) if which is not None else _internal(exc)
    if isinstance(exc, ConfigurationError):
        _log.error("configuration error: %s", exc)
        return error_response(503, "misconfigured", "the service is misconfigured")
    return _internal(exc)


def _internal(exc: BaseException) -> Response:
    reference = uuid.uuid4().hex[:12]
    _log.exception("unhandled error (reference %s)", reference, exc_info=exc)
    # The rule every channel shares: one of our own errors may say what went wrong.
    said = client_message(exc) or "internal error"
    return error_response(500, "internal_error", f"{said} (reference {reference})")


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
        named = storage_failure(exc)
        which = outage(exc, named)
        if which is not None:
            return _outage_response(which)
        if named is not None:
            # A value the database refuses (a NUL in an id, say) is the caller's.
            return _ragsage(named)
        if isinstance(exc, TimeoutError):
            return _outage_response("timeout")
        return _internal(exc)
