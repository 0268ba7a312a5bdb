"""A cited sentence of a PDF comes back with its boxes on the page, end to end over HTTP."""

from __future__ import annotations

import io

from PIL import Image

from api.services import EXTENSION
from ragsage.core.geometry import Box
from ragsage.core.keys import Role
from tests.fixtures.page_boxes import CONTROL, KNOWN, character_cells, iou, two_page_manual

from .api_harness import ApiServer, ingested, make_key
from .worker_harness import Deployment


def test_a_pdf_citation_carries_the_boxes_of_the_quoted_sentence(
    running: Deployment, api: ApiServer
) -> None:
    client = api.client(make_key(running.settings, "acme"))
    manual = two_page_manual()
    ingested(client, "manual.pdf", manual, media_type="application/pdf")
    reply = client.post(
        "/v1/query", json={"question": "At what pressure does the relief valve open?"}
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    [cited] = [c for c in body["citations"] if c["source"] == "manual.pdf"]
    assert cited["page_numbers"] == [2] and cited["located"] == "sentence"
    assert " ".join(KNOWN.split()) in " ".join(cited["quote"].split())
    boxes = [Box(b["left"], b["top"], b["right"], b["bottom"]) for b in cited["boxes"]]
    assert boxes and {b["page"] for b in cited["boxes"]} == {2}
    size = cited["boxes"][0]["page_width"], cited["boxes"][0]["page_height"]
    assert iou(boxes, character_cells(manual, 1, KNOWN), *size) >= 0.8
    assert iou(boxes, character_cells(manual, 1, CONTROL), *size) == 0.0
    # A Markdown source has no page to draw on: its citations carry no boxes.
    ingested(client, "notes.md", b"# Notes\n\nThe relief valve is painted red.\n")
    colour = client.post("/v1/query", json={"question": "What colour is the relief valve?"})
    notes = [c for c in colour.json()["citations"] if c["source"] == "notes.md"]
    assert notes and all(c["boxes"] == [] for c in notes)


def test_a_page_picture_is_served_to_a_reader_and_absent_to_anyone_else(
    running: Deployment, api: ApiServer
) -> None:
    writer = api.client(make_key(running.settings, "acme"))
    job = ingested(writer, "manual.pdf", two_page_manual(), media_type="application/pdf")
    document_id = job["document_id"]
    path = f"/v1/documents/{document_id}/pages/2/image"
    picture = writer.get(path, params={"width": 600})
    assert picture.status_code == 200, picture.text
    assert picture.headers["Content-Type"] == "image/png"
    assert picture.headers["Content-Security-Policy"] == "default-src 'none'"
    assert picture.headers["X-Content-Type-Options"] == "nosniff"
    with Image.open(io.BytesIO(picture.content)) as shown:
        assert shown.width == 600 and 840 <= shown.height <= 852  # A4's proportions
        # The page's ink is where the sentence was drawn (72 pt from the left, on
        # the lines at 700 and 686 pt from the bottom), the margin blank.
        scale = 600 / 595.28
        row = round((841.89 - 703) * scale)
        ink = shown.convert("L").crop((round(72 * scale), row - 4, round(300 * scale), row + 4))
        margin = shown.convert("L").crop((0, row - 4, round(60 * scale), row + 4))
        assert ink.getextrema()[0] < 100 and margin.getextrema()[0] > 240
    # Again: the same picture, from the process's cache.
    assert writer.get(path, params={"width": 600}).content == picture.content
    # A page that is not there, and a document with no pages to show, say so.
    assert writer.get(f"/v1/documents/{document_id}/pages/3/image").status_code == 404
    notes = ingested(writer, "notes.md", b"# Notes\n\nNothing to see.\n")
    assert writer.get(f"/v1/documents/{notes['document_id']}/pages/1/image").status_code == 404
    # Another tenant, and a key bound to a group the document is not open to,
    # find no such document; a group it is open to sees the page.
    other = api.client(make_key(running.settings, "globex"))
    assert other.get(path).status_code == 404
    changed = writer.patch(f"/v1/documents/{document_id}", json={"access": ["group:ops"]})
    assert changed.status_code == 200, changed.text
    sales = api.client(make_key(running.settings, "acme", Role.READ, ["group:sales"]))
    refused = sales.get(path)
    assert refused.status_code == 404 and "no document" in refused.json()["error"]["message"]
    ops = api.client(make_key(running.settings, "acme", Role.READ, ["group:ops"]))
    assert ops.get(path).status_code == 200


def test_pages_drawn_at_once_are_capped_and_a_request_over_the_cap_is_told_to_retry(
    running: Deployment, api: ApiServer
) -> None:
    writer = api.client(make_key(running.settings, "acme"))
    job = ingested(writer, "manual.pdf", two_page_manual(), media_type="application/pdf")
    path = f"/v1/documents/{job['document_id']}/pages/1/image"
    pictures = api.app.extensions[EXTENSION].page_pictures
    waited, pictures.wait = pictures.wait, 0.2
    try:
        # Two other requests are drawing pages: this one waits, then is sent back.
        with pictures.drawing(), pictures.drawing():
            busy = writer.get(path, params={"width": 321})
        assert busy.status_code == 503, busy.text
        assert busy.json()["error"]["code"] == "busy" and int(busy.headers["Retry-After"]) >= 1
        # A slot free, the same request is drawn.
        assert writer.get(path, params={"width": 321}).status_code == 200
    finally:
        pictures.wait = waited
