"""A stored document's page as a picture, for a reader checking a citation against it.

A PDF page is rendered by PDFium; an uploaded picture is its one page.  Both
come out as PNG no wider than ``width`` pixels (and never more than the
parser's pixel budget), so a hostile page size costs no more memory than a
normal one, and a PDF page is drawn in steps against a deadline, so a page of
a million tiny paths costs no more time than the deadline.  Other formats have
no page to show.

What is drawn is decided from the bytes as well as the label: the document
must be routed as a PDF or a picture (as the parser routed it) and its bytes
must be one (a PDF header, or the magic bytes of a PNG, JPEG or TIFF), and a
picture is opened only by its own decoder, through the image reader's
:func:`~ragsage.adapters.parsing.readers.image.open_picture`.  So a GIF named
``x.png`` is refused here exactly as the worker refuses it.
"""

from __future__ import annotations

import ctypes
import io
import math
import time
from typing import Any

from ragsage.adapters.parsing.formats import DocumentFormat, image_media_type, route
from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.adapters.parsing.readers.image import open_picture
from ragsage.core.documents import RawSource
from ragsage.core.errors import InvalidRequest, ParseError

# Widest picture served: enough to read 10-point type on a screen.
MAX_WIDTH = 1400
# Longest a page may take to draw; real pages take tens of milliseconds.
DRAW_SECONDS = 5.0
# PDFium finds a PDF's header anywhere in its first kilobyte, as the spec allows.
PDF_HEADER_WITHIN = 1024


class NoSuchPage(InvalidRequest):
    """The document has no such page, or no pages to show at all."""


def render_page(
    data: bytes,
    *,
    media_type: str | None,
    filename: str | None,
    number: int,
    width: int = MAX_WIDTH,
    limits: ParseLimits | None = None,
    draw_seconds: float = DRAW_SECONDS,
) -> bytes:
    """Page ``number`` (from 1) of a stored PDF or picture, as PNG bytes.

    The document is routed as the parser routed it at ingestion (declared
    type, name, then leading bytes), so what was read as a PDF is drawn as one.
    """
    limits = limits or ParseLimits()
    name = filename or "document"
    kind = route(RawSource(data, name, media_type))
    if kind not in (DocumentFormat.PDF, DocumentFormat.IMAGE):
        raise NoSuchPage(f"{name}: only PDF and image documents have page pictures")
    if kind is not drawable_kind(data):
        raise ParseError(name, f"the bytes are not the {_KIND_NAMES[kind]} its name or type says")
    width = max(1, min(width, MAX_WIDTH))
    if kind is DocumentFormat.PDF:
        return _pdf_page(data, number, width, limits, name, draw_seconds)
    if number != 1:
        raise NoSuchPage(f"{name}: a picture has one page, not {number}")
    return _picture(data, width, limits, name)


_KIND_NAMES = {DocumentFormat.PDF: "PDF", DocumentFormat.IMAGE: "PNG, JPEG or TIFF picture"}


def drawable_kind(data: bytes) -> DocumentFormat | None:
    """IMAGE or PDF if the bytes themselves are an accepted picture or a PDF, else None.

    A picture's magic bytes open the file, so they are looked for first; a
    PDF's header is found where PDFium, which reads it, would find it.
    """
    if image_media_type(data[:16]) is not None:
        return DocumentFormat.IMAGE
    if b"%PDF-" in data[:PDF_HEADER_WITHIN]:
        return DocumentFormat.PDF
    return None


def _pdf_page(
    data: bytes, number: int, width: int, limits: ParseLimits, name: str, draw_seconds: float
) -> bytes:
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        raise ParseError(name, "not a readable PDF") from exc
    try:
        if not 1 <= number <= len(pdf):
            raise NoSuchPage(f"{name}: the document has {len(pdf)} pages, not {number}")
        page = pdf[number - 1]
        try:
            page_width, page_height = page.get_size()
            scale = width / max(page_width, 1.0)
            budget = math.sqrt(limits.max_image_pixels / max(page_width * page_height, 1.0))
            scale = min(scale, budget)
            size = (max(1, round(page_width * scale)), max(1, round(page_height * scale)))
            picture = _draw(page, size, draw_seconds, name, number)
        finally:
            page.close()
    finally:
        pdf.close()
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue()


def _draw(page: Any, size: tuple[int, int], seconds: float, name: str, number: int) -> Any:
    """The page drawn on a white bitmap of ``size``, step by step for at most ``seconds``.

    PDFium's progressive renderer asks between batches of page objects whether
    to pause; it pauses once the deadline has passed, and the drawing is given up.
    """
    import pypdfium2
    import pypdfium2.raw as pdfium_c

    deadline = time.monotonic() + seconds

    def past_deadline(_pause: Any) -> bool:
        return time.monotonic() >= deadline

    pause = pdfium_c.IFSDK_PAUSE(version=1)
    pause.NeedToPauseNow = type(pause.NeedToPauseNow)(past_deadline)
    bitmap = pypdfium2.PdfBitmap.new_native(*size, pdfium_c.FPDFBitmap_BGR)
    try:
        bitmap.fill_rect((255, 255, 255, 255), 0, 0, *size)
        state = pdfium_c.FPDF_RenderPageBitmap_Start(
            bitmap, page, 0, 0, *size, 0, pdfium_c.FPDF_ANNOT, ctypes.byref(pause)
        )
        try:
            while state == pdfium_c.FPDF_RENDER_TOBECONTINUED:
                if time.monotonic() >= deadline:
                    raise ParseError(
                        name, f"page {number} takes longer to draw than the limit of {seconds:g} s"
                    )
                state = pdfium_c.FPDF_RenderPage_Continue(page, ctypes.byref(pause))
        finally:
            pdfium_c.FPDF_RenderPage_Close(page)
        if state != pdfium_c.FPDF_RENDER_DONE:
            raise ParseError(name, f"page {number} could not be drawn")
        return bitmap.to_pil()
    finally:
        bitmap.close()


def _picture(data: bytes, width: int, limits: ParseLimits, name: str) -> bytes:
    with open_picture(data, name, limits) as (picture, _media_type):
        picture.thumbnail((width, width * 4))
        buffer = io.BytesIO()
        picture.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()
