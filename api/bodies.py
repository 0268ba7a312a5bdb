"""How many bytes a request's body may hold, counted on the bytes read.

A limit checked on ``Content-Length`` alone is no limit: a chunked body has no
such header, and reading it whole is the very thing the limit is for.  So each
request is given its route's limit before anything can read its body
(:func:`hold_request_body`), werkzeug holds the stream to it whatever the
transfer encoding, and views read a raw body only through :func:`read_body`.
A body over its limit is refused with 413 ``too_large``, the limit named.

A route's limit is the JSON one unless its view is marked :func:`upload_body`;
an upload is held to the operator's upload cap (``RAGSAGE_MAX_UPLOAD_BYTES``)
plus room for its fields, in the encoding it arrives in.  The limits are
published in ``/openapi.json`` (``x-max-bytes`` on each body's media type).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TypeVar

from flask import Flask, Request, Response, current_app, g, request
from werkzeug.exceptions import RequestEntityTooLarge

from api.errors import ApiError, error_response
from api.services import EXTENSION, Services

MAX_JSON_BYTES = 1024 * 1024
# Beside an upload's file: its other fields (metadata, access list, ids) and the
# framing of the form or the JSON object, as much as a JSON body may hold.
UPLOAD_FIELD_BYTES = MAX_JSON_BYTES
MULTIPART = "multipart/form-data"
# How far a refused body is read on, and dropped, past what was read of it.  Most
# HTTP clients send a whole body before they read the answer; if the server closes
# with part of it unread, the reset can take the 413 with it.  A body that does not
# end within this much is cut off instead: its client sees the connection close.
DISCARD_BYTES = 1024 * 1024
_UPLOAD_MARK = "ragsage_upload_body"

_View = TypeVar("_View", bound=Callable[..., object])


@dataclass(frozen=True)
class BodyLimit:
    """The most bytes a body may hold, and the message that refuses one over it."""

    size: int
    message: str


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


def hold_request_body() -> None:
    """Give this request its route's body limit, before anything reads the body."""
    limit = limit_for(current_app, request.endpoint, request.mimetype)
    g.body_limit = limit
    # With a Content-Length, werkzeug refuses a body declared over the limit and
    # never reads past what was declared.  Without one (chunked), werkzeug stops
    # at the maximum and hands back what it read as if the body ended there: one
    # byte more is let through, so read_body can tell a body at its limit from one
    # over it (and a multipart body one byte over fails on its next read).
    chunked = request.content_length is None
    request.max_content_length = limit.size + 1 if chunked else limit.size


def current_limit() -> BodyLimit:
    found = g.get("body_limit")
    return found if isinstance(found, BodyLimit) else JSON_LIMIT


def read_body() -> bytes:
    """The request's raw body; 413 if it is over the route's limit.

    Not cached on the request: a view that needs the bytes twice keeps them.
    """
    data = request.get_data(cache=False)
    if len(data) > current_limit().size:
        del data  # not kept alive by the traceback while the refusal is written
        raise RequestEntityTooLarge()
    return data


class ApiRequest(Request):
    """Flask's request, which also closes the files a multipart body was spooled to
    when reading it stopped part-way (over a limit, say): werkzeug leaves those to
    the garbage collector."""

    _spooled: list[IO[bytes]] | None = None

    def _get_file_stream(
        self,
        total_content_length: int | None,
        content_type: str | None,
        filename: str | None = None,
        content_length: int | None = None,
    ) -> IO[bytes]:
        stream = super()._get_file_stream(
            total_content_length, content_type, filename, content_length
        )
        if self._spooled is None:
            self._spooled = []
        self._spooled.append(stream)
        return stream

    def close(self) -> None:
        super().close()
        for stream in self._spooled or ():
            stream.close()


def _discard_rest() -> None:
    """Read and drop what is left of a refused body, if it ends soon enough."""
    environ = request.environ
    if "wsgi.input_terminated" not in environ:
        return  # the server does not end the stream at the body's end: a read could block
    declared = request.content_length
    if declared is not None and declared > current_limit().size + DISCARD_BYTES:
        return  # it would not end in time
    # A declared body was refused before any of it was read; a chunked one once
    # past its limit.  The server's stream ends where the body does either way.
    left = declared if declared is not None else DISCARD_BYTES
    stream = environ["wsgi.input"]
    try:
        while left > 0:
            piece = stream.read(min(left, 64 * 1024))
            if not piece:
                return
            left -= len(piece)
    except Exception:  # a client gone or a malformed chunk: the answer is the same
        return


def _refused(_: RequestEntityTooLarge) -> Response:
    # Raised by read_body, by werkzeug when a stream runs past its maximum or a
    # multipart field past its own; the route's limit names what applies.
    _discard_rest()
    return error_response(413, "too_large", current_limit().message)


def hold_bodies(app: Flask) -> None:
    """Hold every request of ``app`` to its route's body limit (call before other hooks)."""
    app.request_class = ApiRequest
    # What a request the hook has not seen may read: the smallest limit.
    app.config["MAX_CONTENT_LENGTH"] = JSON_LIMIT.size
    app.before_request(hold_request_body)
    app.register_error_handler(RequestEntityTooLarge, _refused)
