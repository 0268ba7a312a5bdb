"""Helpers shared by the blueprints: parsing bodies, paging, running engine code."""

from __future__ import annotations

from typing import Any, TypeVar

from flask import request
from pydantic import BaseModel

from api.errors import ApiError
from ragsage.text import clean

_M = TypeVar("_M", bound=BaseModel)
MAX_JSON_BYTES = 1024 * 1024


def json_body(model: type[_M]) -> _M:
    """The request's JSON body validated as ``model`` (4xx with the reason otherwise)."""
    if request.content_length is not None and request.content_length > MAX_JSON_BYTES:
        raise ApiError(413, "too_large", f"a JSON body is at most {MAX_JSON_BYTES:,} bytes")
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send the body as application/json")
    data = request.get_json(silent=True)
    if data is None:
        raise ApiError(400, "malformed_json", "the body is not valid JSON")
    if not isinstance(data, dict):
        raise ApiError(422, "invalid_request", "the body must be a JSON object")
    return model.model_validate(cleaned(data))


def cleaned(value: Any) -> Any:
    """JSON with every string freed of NULs and broken surrogates (see ``clean``)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(key): cleaned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [cleaned(item) for item in value]
    return value


def int_arg(name: str, default: int, low: int, high: int) -> int:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "invalid_request", f"{name} must be an integer") from None
    if not low <= value <= high:
        raise ApiError(400, "invalid_request", f"{name} must be between {low} and {high}")
    return value
