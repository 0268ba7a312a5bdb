"""A scanned page read by Tesseract: its text, and where each line of it is on the page."""

from __future__ import annotations

import asyncio
import io
import re

from PIL import ImageDraw, ImageFont

from ragsage.adapters.offline import ExtractiveReader
from ragsage.adapters.providers.tesseract import TesseractTranscriber
from ragsage.cli.local import local_kit
from ragsage.core.documents import RawSource
from ragsage.core.geometry import Box
from ragsage.core.pages import PageImage, PageRoute
from ragsage.core.scopes import Scope
from ragsage.core.transcribing import SplitLLMClient
from tests.fixtures.make_fixtures import SCANNED_TEXT, _scan_image, scanned_pdf
from tests.fixtures.page_boxes import iou


def test_the_words_tesseract_reads_are_boxed_where_they_were_drawn() -> None:
    picture = _scan_image()
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    image = PageImage(buffer.getvalue(), "image/png", picture.width, picture.height)
    text, positions = asyncio.run(TesseractTranscriber().transcribe_placed(image))
    assert text == SCANNED_TEXT
    assert positions is not None and positions.text == text
    assert (positions.width, positions.height) == (picture.width, picture.height)
    # The truth: where the words were drawn, from the drawing's own measure.
    font = ImageFont.load_default(size=64)
    draw = ImageDraw.Draw(picture)
    start = text.index("INVOICE")
    before = draw.textlength(SCANNED_TEXT[:start], font=font)
    _, top, right, bottom = draw.textbbox((120, 200), SCANNED_TEXT, font=font)
    drawn = [Box(120 + before, top, right, bottom)]
    found = positions.boxes(start, len(text))
    assert iou(found, drawn, picture.width, picture.height) >= 0.8
    # The first word's box lies left of the cited ones: it is not part of them.
    first = positions.boxes(0, len("SCANNED"))
    assert iou(first, drawn, picture.width, picture.height) == 0.0


def test_a_scanned_page_read_by_ocr_keeps_its_lines_positions_through_ingestion() -> None:
    kit = local_kit()
    kit.llm = SplitLLMClient(ExtractiveReader(), TesseractTranscriber())
    prepared = asyncio.run(
        kit.ingestion().prepare(Scope("scans"), RawSource(scanned_pdf(), "scan.pdf"))
    )
    [page] = prepared.pages
    assert page.route is PageRoute.VISION and re.search(r"INVOICE\s+4711", page.text)
    assert page.positions is not None and len(page.positions.lines) == 1
    line = page.positions.lines[0]
    assert page.text[line.start : line.end] == SCANNED_TEXT
