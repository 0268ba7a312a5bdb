"""Page pictures: the API draws only what the worker ingested, with the allowed decoders.

The attack: a write key uploads bytes of a format ragsage does not read (GIF,
BMP, EPS, which Pillow hands to Ghostscript) or a header claiming 400
megapixels, named ``x.png``, then asks for the page picture.  The API, over
real HTTP against a real Postgres, must answer with a JSON refusal (never a
picture, never a 500), and no Pillow plugin outside PNG, JPEG and TIFF may be
asked to open the bytes: the API runs in this process, so
:func:`~tests.fixtures.pictures.watch_decoders` sees every plugin it uses.
"""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest
from PIL import Image
from sqlalchemy import text

from ragsage.adapters.postgres import Database
from ragsage.core.scopes import Scope
from tests.fixtures.make_fixtures import scan_png
from tests.fixtures.page_boxes import two_page_manual
from tests.fixtures.pictures import drawn, gif_claiming, png_claiming, watch_decoders
from tests.integration.api_harness import ApiServer, ingested, make_key, with_database
from tests.integration.worker_harness import Deployment

NAMESPACE = "acme"
# What a client may send as a PNG; each is something else, or a bomb.
NAMED_PNG = {
    "gif.png": drawn("GIF"),
    "bmp.png": drawn("BMP"),
    "eps.png": drawn("EPS"),
    "gif-bomb.png": gif_claiming(),
    "png-bomb.png": png_claiming(),
}


def _upload(client: httpx.Client, name: str, data: bytes, media_type: str) -> dict[str, Any]:
    reply = client.post("/v1/documents", files={"file": (name, data, media_type)})
    assert reply.status_code == 202, reply.text
    body: dict[str, Any] = reply.json()
    return body


def _page(client: httpx.Client, document_id: str, width: int = 600) -> httpx.Response:
    return client.get(f"/v1/documents/{document_id}/pages/1/image", params={"width": width})


def _refused(reply: httpx.Response, status: int, *words: str) -> str:
    """The reply is a JSON error of ``status`` whose message holds ``words``."""
    assert reply.status_code == status, (reply.status_code, reply.text[:300])
    assert reply.headers["Content-Type"].startswith("application/json")
    message: str = reply.json()["error"]["message"]
    for word in words:
        assert word in message, message
    return message


def _as_namespace(deployment: Deployment, statement: str, **params: Any) -> None:
    """Run one statement in the namespace (all principals), as an operator would in psql."""

    async def run(database: Database) -> None:
        async with database.session(Scope(NAMESPACE)) as session:
            await session.execute(text(statement), params)

    with_database(deployment.settings, run)


def test_a_document_not_yet_ingested_is_never_drawn(
    deployment: Deployment, api: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No worker: every upload stays queued.
    used = watch_decoders(monkeypatch)
    client = api.client(make_key(deployment.settings, NAMESPACE))
    for name, data in {**NAMED_PNG, "real.png": scan_png()}.items():
        document_id = _upload(client, name, data, "image/png")["document_id"]
        _refused(_page(client, document_id), 409, "is queued", "once it is ingested")
        assert _page(client, document_id).json()["error"]["code"] == "not_ingested"
    assert used == []


def test_what_the_worker_refused_is_refused_here_and_never_reaches_another_decoder(
    running: Deployment, api: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = watch_decoders(monkeypatch)
    client = api.client(make_key(running.settings, NAMESPACE))
    uploads = {name: _upload(client, name, data, "image/png") for name, data in NAMED_PNG.items()}
    jobs = running.wait(NAMESPACE, [upload["job_id"] for upload in uploads.values()])
    assert {job.state.value for job in jobs.values()} == {"failed"}
    documents = {name: upload["document_id"] for name, upload in uploads.items()}
    # The job's own reason comes back: the format, or the pixel limit.
    for name in ("gif.png", "bmp.png", "eps.png", "gif-bomb.png"):
        _refused(_page(client, documents[name]), 409, name, "not a PNG, JPEG or TIFF image")
    _refused(_page(client, documents["png-bomb.png"]), 409, "limit of 25000000 pixels")
    # Were a row marked ingested anyway (as a release without these checks may
    # have left one), the bytes are still judged, and no other decoder runs.
    _as_namespace(running, "UPDATE ragsage_documents SET status = 'ready'")
    for name in ("gif.png", "bmp.png", "eps.png", "gif-bomb.png"):
        _refused(_page(client, documents[name]), 422, name, "not the PNG, JPEG or TIFF")
    _refused(_page(client, documents["png-bomb.png"]), 422, "limit of 25000000 pixels")
    assert used == []


def test_a_real_picture_and_pdf_are_drawn_and_a_drawn_page_comes_from_the_cache(
    running: Deployment, api: ApiServer
) -> None:
    client = api.client(make_key(running.settings, NAMESPACE))
    pdf = ingested(client, "manual.pdf", two_page_manual(), media_type="application/pdf")
    picture = ingested(client, "scan.png", scan_png(), media_type="image/png")
    for job in (pdf, picture):
        shown = _page(client, job["document_id"])
        assert shown.status_code == 200, shown.text
        assert shown.headers["Content-Type"] == "image/png"
        with Image.open(io.BytesIO(shown.content), formats=["PNG"]) as page:
            assert page.width == 600
    # A newer upload of the manual that fails leaves the ingested one drawn.
    newer = client.post(
        "/v1/documents",
        files={"file": ("manual.pdf", drawn("GIF"), "application/pdf")},
        data={"external_id": "manual.pdf"},
    )
    assert newer.status_code == 202, newer.text
    assert newer.json()["document_id"] == pdf["document_id"]
    [failed] = running.wait(NAMESPACE, [newer.json()["job_id"]]).values()
    assert failed.state.value == "failed"
    before = _page(client, pdf["document_id"])
    assert before.status_code == 200 and before.content.startswith(b"\x89PNG")
    # With the stored files gone, a page drawn before is still served (the
    # cache answered without reading them); one never drawn cannot be.
    _as_namespace(running, "DELETE FROM ragsage_blobs")
    for job in (pdf, picture):
        assert _page(client, job["document_id"]).status_code == 200
        _refused(_page(client, job["document_id"], width=500), 404, "no stored file")
