"""Helpers shared by the blueprints: parsing bodies, paging, running engine code."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from flask import request
from pydantic import BaseModel

from api.bodies import read_body
from api.errors import ApiError
from api.schemas.common import MAX_PATH_ID_CHARS, PATH_ID_PATTERN
from ragsage.core.errors import InvalidRequest
from ragsage.core.text import clean

_M = TypeVar("_M", bound=BaseModel)
_PATH_ID = re.compile(PATH_ID_PATTERN)
# No request body this API defines nests deeper than a handful of levels; the
# bound keeps every later walk over the value (cleaning, validation) shallow.
MAX_JSON_DEPTH = 32


def json_body(model: type[_M]) -> _M:
    """The request's JSON body validated as ``model`` (4xx with the reason otherwise)."""
    return _validated(model, read_body())


def optional_json_body(model: type[_M], default: _M) -> _M:
    """As :func:`json_body`, with ``default`` standing for an empty body."""
    raw = read_body()
    return _validated(model, raw) if raw else default


def _validated(model: type[_M], raw: bytes) -> _M:
    if not request.is_json:
        raise ApiError(415, "unsupported_media_type", "send the body as application/json")
    data = parse_json(raw, "the body")
    del raw  # an upload's bytes need not outlive their parse
    if not isinstance(data, dict):
        raise ApiError(422, "invalid_request", "the body must be a JSON object")
    return model.model_validate(cleaned(data))


def parse_json(raw: bytes | str, what: str) -> Any:
    """``raw`` decoded as JSON, refused with 400 if malformed or nested too deeply."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise _too_deep(what) from None
    except ValueError:  # also UnicodeDecodeError: bytes that are not UTF-8
        raise ApiError(400, "malformed_json", f"{what} is not valid JSON") from None
    if _depth_exceeds(data, MAX_JSON_DEPTH):
        raise _too_deep(what)
    return data


def _too_deep(what: str) -> ApiError:
    return ApiError(400, "malformed_json", f"{what} nests deeper than {MAX_JSON_DEPTH} levels")


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True if ``value`` nests arrays and objects more than ``limit`` deep (no recursion)."""
    level: list[Any] = [value]
    depth = 0
    while any(isinstance(item, (dict, list)) for item in level):
        depth += 1
        if depth > limit:
            return True
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return False


def cleaned(value: Any) -> Any:
    """JSON with every string freed of NULs and broken surrogates (see ``clean``)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(key): cleaned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [cleaned(item) for item in value]
    return value


def check_path_ids(values: dict[str, Any]) -> None:
    """Refuse, with 400, a path id no stored id could ever equal (a NUL, say)."""
    for name, value in values.items():
        if not isinstance(value, str):
            continue
        if not _PATH_ID.fullmatch(value):
            raise ApiError(400, "invalid_request", f"{name} contains a control character")
        if len(value) > MAX_PATH_ID_CHARS:
            raise ApiError(
                400, "invalid_request", f"{name} is longer than {MAX_PATH_ID_CHARS} characters"
            )


def text_arg(name: str, max_chars: int, refusal: str) -> str | None:
    """A query-string text, or None when absent or empty; ``refusal`` when it is too
    long or holds a NUL (which no stored value can)."""
    value = request.args.get(name) or None
    if value is not None and ("\x00" in value or len(value) > max_chars):
        raise InvalidRequest(refusal)
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
