"""Uploading, listing and deleting documents."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from flask import Blueprint, Response, request

from api import convert
from api.auth import require
from api.bodies import decoded_length, file_too_large, upload_body
from api.documented import COMMON_ERRORS, Reply, cursor, documented, ok, query_int, query_text
from api.errors import ApiError, unavailable
from api.page_cache import Busy, PageKey
from api.routes.common import cleaned, int_arg, json_body, parse_json, text_arg
from api.schemas.documents import (
    MAX_CURSOR_CHARS,
    MAX_NAME_FILTER_CHARS,
    AccessChange,
    DocumentList,
    DocumentOut,
    DocumentUpload,
    UploadFields,
    UploadResponse,
)
from api.services import Services, services
from ragsage.adapters.parsing.page_images import MAX_WIDTH, NoSuchPage, render_page
from ragsage.core.documents import DocumentRecord
from ragsage.core.errors import ParseError
from ragsage.core.keys import Role
from ragsage.core.scopes import MAX_PRINCIPALS, PRINCIPAL_PATTERN, Scope

blueprint = Blueprint("documents", __name__)
# The form upload, beside the JSON one that DocumentUpload describes.
MULTIPART_UPLOAD: dict[str, Any] = {
    "schema": {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {"type": "string", "format": "binary", "minLength": 1},
            "metadata": {
                "type": "object",
                "additionalProperties": {"type": ["string", "integer", "number", "boolean"]},
            },
            "external_id": {"type": "string", "minLength": 1, "maxLength": 512},
            "job_class": {"type": "string", "enum": ["interactive", "bulk"]},
            "access": {
                "type": "array",
                "items": {"type": "string", "pattern": PRINCIPAL_PATTERN, "maxLength": 200},
                "maxItems": MAX_PRINCIPALS,
            },
        },
    },
    "encoding": {
        "metadata": {"contentType": "application/json"},
        "access": {"contentType": "application/json"},
    },
}


def _upload_from_request() -> tuple[UploadFields, bytes]:
    cap = services().settings.max_upload_bytes
    if request.mimetype == "multipart/form-data":
        upload = request.files.get("file")
        if upload is None or not upload.filename:
            raise ApiError(
                400, "invalid_request", "send the document as the multipart field 'file'"
            )
        metadata = parse_json(request.form.get("metadata") or "{}", "metadata")
        if not isinstance(metadata, dict):
            raise ApiError(400, "invalid_request", "metadata must be a JSON object")
        fields: dict[str, Any] = {
            "filename": upload.filename,
            "media_type": upload.mimetype or None,
            "metadata": metadata,
            # Present but empty is refused by the model, not taken for absent.
            "external_id": request.form.get("external_id"),
        }
        if "job_class" in request.form:
            fields["job_class"] = request.form["job_class"]
        if "access" in request.form:
            fields["access"] = parse_json(request.form["access"], "access")
        body = UploadFields.model_validate(cleaned(fields))
        # The file was spooled within the body's limit; only the cap is read back.
        data = upload.read(cap + 1)
        if len(data) > cap:
            raise file_too_large(body.filename, cap)
        return body, data
    parsed = json_body(DocumentUpload)
    # Counted from the text's length, so a file over the cap is never decoded.
    if decoded_length(parsed.content_base64) > cap:
        raise file_too_large(parsed.filename, cap)
    try:
        data = base64.b64decode(parsed.content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "invalid_request", "content_base64 is not valid base64") from None
    return parsed, data


@blueprint.post("/v1/documents")
@documented(
    "Upload a document for ingestion",
    ok(UploadResponse, 202),
    ok(UploadResponse, 200),
    body=DocumentUpload,
    body_also={"multipart/form-data": MULTIPART_UPLOAD},
)
@upload_body
def upload() -> Any:
    who = require(Role.WRITE)
    fields, data = _upload_from_request()
    media_type = fields.media_type
    if media_type == "application/octet-stream":
        media_type = None  # let routing sniff the bytes rather than trust a generic type
    outcome = services().enqueuer.enqueue_document(
        who.scope.namespace,
        fields.filename,
        data,
        media_type=media_type,
        metadata=fields.metadata,
        external_id=fields.external_id,
        job_class=fields.job_class,
        access=fields.access,
        principals=who.scope.principals,
    )
    body = UploadResponse(
        document_id=outcome.document_id,
        job_id=str(outcome.job_id) if outcome.job_id else None,
        state=outcome.state.value,
        duplicate=outcome.duplicate,
    )
    response = convert.dump(body)
    response.status_code = 200 if outcome.duplicate else 202
    if outcome.job_id is not None:
        response.headers["Location"] = f"/v1/jobs/{outcome.job_id}"
    return response


@blueprint.get("/v1/documents")
@documented(
    "Documents, newest first (with name: those whose file name or title holds it)",
    ok(DocumentList),
    query=(
        query_int("limit", 1, 200),
        cursor(MAX_CURSOR_CHARS),
        query_text(
            "name",
            {"type": "string", "maxLength": MAX_NAME_FILTER_CHARS, "pattern": "^[^\\x00]*$"},
        ),
    ),
)
def list_all() -> Any:
    who = require(Role.READ)
    limit = int_arg("limit", 50, 1, 200)
    cursor = text_arg(
        "cursor",
        MAX_CURSOR_CHARS,
        "cursor is not one this API issued; pass next_cursor unchanged",
    )
    name = text_arg(
        "name",
        MAX_NAME_FILTER_CHARS,
        f"name must be at most {MAX_NAME_FILTER_CHARS} characters, with no NUL character",
    )
    here = services()
    found = here.run(
        here.runtime.management.documents.page(who.scope, limit=limit, after=cursor, name=name)
    )
    return convert.dump(
        DocumentList(
            documents=[DocumentOut(**record.to_dict()) for record in found.items],
            next_cursor=found.next_cursor,
        )
    )


@blueprint.get("/v1/documents/<document_id>")
@documented("One document", ok(DocumentOut))
def get_one(document_id: str) -> Any:
    who = require(Role.READ)
    here = services()
    record = here.run(here.runtime.management.documents.get(who.scope, document_id))
    return convert.dump(DocumentOut(**record.to_dict()))


@blueprint.patch("/v1/documents/<document_id>")
@documented(
    "Change a document's access list, on every chunk and job of it at once",
    ok(DocumentOut),
    body=AccessChange,
)
def change(document_id: str) -> Any:
    who = require(Role.WRITE)
    body = json_body(AccessChange)
    here = services()
    documents = here.runtime.management.documents
    record = here.run(documents.change_access(who.scope, document_id, body.access))
    return convert.dump(DocumentOut(**record.to_dict()))


@blueprint.delete("/v1/documents/<document_id>")
@documented("Delete a document, its chunks, bytes and jobs", Reply(204, "deleted"))
def delete(document_id: str) -> Any:
    who = require(Role.WRITE)
    here = services()
    here.run(here.runtime.management.documents.delete(who.scope, document_id))
    return Response(status=204)


@blueprint.get("/v1/documents/<document_id>/pages/<int:number>/image")
@documented(
    "A page of a PDF or picture document as PNG, to check a citation against",
    Reply(200, "the page", also={"image/png": {"schema": {"type": "string", "format": "binary"}}}),
    errors=(*COMMON_ERRORS, 409),
    query=(query_int("width", 100, MAX_WIDTH),),
)
def page_picture(document_id: str, number: int) -> Any:
    """Only an ingested document's page is drawn, and a drawn page is served from the cache.

    The document's record is read as the caller first; the cache, keyed by
    the version's content hash, is asked next, and the stored bytes are read
    only to draw a page it does not hold.
    """
    who = require(Role.READ)
    width = int_arg("width", MAX_WIDTH, 100, MAX_WIDTH)
    here = services()
    # Read as the caller first: Row-Level Security decides before any byte is read.
    # A document the key may not read is absent, as for every other read.
    record = here.run(here.runtime.management.documents.get(who.scope, document_id))
    _check_ingested(record)
    key = (who.scope.namespace, record.content_hash, number, width)
    picture = here.page_pictures.get(key)
    if picture is None:
        try:
            with here.page_pictures.drawing():
                picture = _drawn_page(here, key, who.scope, record)
        except Busy:
            return unavailable("every page-drawing slot is taken; retry shortly", 2, code="busy")
    response = Response(picture, mimetype="image/png")
    response.headers["Cache-Control"] = "private, max-age=3600"
    response.headers["Content-Security-Policy"] = "default-src 'none'"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _check_ingested(record: DocumentRecord) -> None:
    """Refuse a document with no ingested version: what the worker refused is never drawn.

    A ready document being replaced keeps its ingested version's hash, name
    and type on its row until the new version succeeds, so that is what is drawn.
    """
    if record.status == "ready" and record.content_hash:
        return
    if record.status == "failed":
        said = f"its ingestion failed: {record.error}" if record.error else "its ingestion failed"
        raise ApiError(409, "not_ingested", f"document {record.id!r} has no pages to show; {said}")
    raise ApiError(
        409,
        "not_ingested",
        f"document {record.id!r} is {record.status}; its pages can be shown once it is ingested",
    )


def _drawn_page(here: Services, key: PageKey, scope: Scope, record: DocumentRecord) -> bytes:
    """The page ``key`` names, drawn from the stored bytes (in a drawing slot) and kept."""
    _, _, number, width = key
    # Another request may have drawn it while this one waited for the slot.
    picture = here.page_pictures.get(key)
    if picture is not None:
        return picture
    data = here.run(here.runtime.management.documents.stored_bytes(scope, record))
    try:
        picture = render_page(
            data, media_type=record.media_type, filename=record.filename, number=number, width=width
        )
    except NoSuchPage as exc:
        raise ApiError(404, "not_found", str(exc)) from None
    except ParseError as exc:
        raise ApiError(422, "unprocessable", str(exc)) from None
    here.page_pictures.put(key, picture)
    return picture
