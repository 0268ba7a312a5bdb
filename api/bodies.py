"""How many bytes each route's request body may hold.

A route's limit is the JSON one unless its view is marked :func:`upload_body`;
an upload is held to the operator's upload cap (``RAGSAGE_MAX_UPLOAD_BYTES``)
plus room for its fields, in the encoding it arrives in.  The limits are
published in ``/openapi.json`` (``x-max-bytes`` on each body's media type).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from flask import Flask

from api.errors import ApiError
from api.services import EXTENSION, Services

MAX_JSON_BYTES = 1024 * 1024
# Beside an upload's file: its other fields (metadata, access list, ids) and the
# framing of the form or the JSON object, as much as a JSON body may hold.
UPLOAD_FIELD_BYTES = MAX_JSON_BYTES
MULTIPART = "multipart/form-data"
_UPLOAD_MARK = "ragsage_upload_body"

_View = TypeVar("_View", bound=Callable[..., object])


@dataclass(frozen=True)
class BodyLimit:
    """The most bytes a body may hold, and the refusal that says so."""

    size: int
    message: str

    def refusal(self) -> ApiError:
        return ApiError(413, "too_large", self.message)


JSON_LIMIT = BodyLimit(MAX_JSON_BYTES, f"a JSON body is at most {MAX_JSON_BYTES:,} bytes")


def base64_length(size: int) -> int:
    """Characters of padded base64 for ``size`` bytes: four for every three, rounded up."""
    return 4 * ((size + 2) // 3)


def decoded_length(text: str) -> int:
    """Bytes that padded base64 ``text`` decodes to, counted without decoding it."""
    padding = len(text) - len(text.rstrip("="))
    return len(text) // 4 * 3 - min(padding, 2)


def upload_limit(max_upload_bytes: int, media_type: str, max_form_field: int) -> BodyLimit:
    """An upload's body limit: a file at the cap fits, in either encoding, with its fields."""
    cap = f"{max_upload_bytes:,}"
    if media_type == MULTIPART:
        size = max_upload_bytes + UPLOAD_FIELD_BYTES
        return BodyLimit(
            size,
            f"a multipart upload is at most {size:,} bytes (a file of at most {cap} bytes "
            f"and its fields, each field beside the file at most {max_form_field:,} bytes)",
        )
    size = base64_length(max_upload_bytes) + UPLOAD_FIELD_BYTES
    return BodyLimit(
        size,
        f"an upload sent as JSON is at most {size:,} bytes (a file of at most {cap} bytes, "
        "base64-encoded, and its fields)",
    )


def upload_body(view: _View) -> _View:
    """Mark ``view`` as taking an upload: its body is held to the upload limit."""
    setattr(view, _UPLOAD_MARK, True)
    return view


def limit_for(app: Flask, endpoint: str | None, media_type: str) -> BodyLimit:
    """The body limit of ``endpoint`` for a body of ``media_type`` (JSON's when unmarked)."""
    view = app.view_functions.get(endpoint) if endpoint is not None else None
    if view is None or not getattr(view, _UPLOAD_MARK, False):
        return JSON_LIMIT
    here: Services = app.extensions[EXTENSION]
    max_form_field = int(app.config["MAX_FORM_MEMORY_SIZE"] or 0)
    return upload_limit(here.settings.max_upload_bytes, media_type, max_form_field)


def file_too_large(filename: str, max_upload_bytes: int) -> ApiError:
    return ApiError(
        413,
        "too_large",
        f"{filename}: the file is over the upload limit of {max_upload_bytes:,} bytes",
    )
