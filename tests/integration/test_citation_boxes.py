"""A cited sentence of a PDF comes back with its boxes on the page, end to end over HTTP."""

from __future__ import annotations

from ragsage.core.types import Box
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
