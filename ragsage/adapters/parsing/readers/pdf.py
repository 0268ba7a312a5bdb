"""PDF through pypdfium2: per-page text, a measured layout, and a render for scans."""

from __future__ import annotations

import ctypes
import io
import math
import re
from typing import TYPE_CHECKING, Any

from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.core.documents import RawSource
from ragsage.core.errors import ParseError
from ragsage.core.geometry import PagePositions
from ragsage.core.pages import Page, PageImage, PageLayout, ParsedDocument

if TYPE_CHECKING:
    from ragsage.adapters.parsing.classifier import LayoutPageClassifier

# A line from its first to its last visible character, in the page text and in
# PDFium's, whose line ends may be CR LF.
_TEXT_LINE = re.compile(r"\S(?:[^\n]*\S)?")
_RAW_LINE = re.compile(r"\S(?:[^\r\n]*\S)?")
# PDFium's load error codes (FPDF_ERR_*) that deserve their own message.
_LOAD_ERRORS = {
    2: "cannot be opened as PDF (file not found or unreadable)",
    3: "not a valid PDF (corrupt or truncated)",
    4: "encrypted PDF: a password is required to open it",
    5: "PDF is protected by an unsupported security handler",
}


def read_pdf(
    source: RawSource, limits: ParseLimits, classifier: LayoutPageClassifier
) -> ParsedDocument:
    """Every page's text and layout; only pages the classifier would call scans get a render."""
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(source.content)
    except pypdfium2.PdfiumError as exc:
        reason = _LOAD_ERRORS.get(getattr(exc, "err_code", -1), f"not a readable PDF ({exc})")
        raise ParseError(source.filename, reason) from exc
    try:
        count = len(pdf)
        if count > limits.max_pages:
            raise ParseError(
                source.filename, f"{count} pages exceeds the limit of {limits.max_pages}"
            )
        pages = []
        for index in range(count):
            try:
                pages.append(_read_page(pdf, index, limits, classifier))
            except pypdfium2.PdfiumError as exc:
                raise ParseError(
                    source.filename, f"page {index + 1} is unreadable ({exc})"
                ) from exc
        title = _title(pdf)
    finally:
        pdf.close()
    return ParsedDocument(pages=tuple(pages), title=title)


def _read_page(pdf: Any, index: int, limits: ParseLimits, classifier: LayoutPageClassifier) -> Page:
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        width, height = page.get_size()
        try:
            bounded = textpage.get_text_bounded()
            text = _clean(bounded)
            positions = _positions(textpage, bounded, text, width, height) if text else None
        finally:
            textpage.close()
        coverage, largest = _image_areas(page, width * height)
        layout = PageLayout(
            # str.split() cuts on exactly what str.isspace() calls space, in C.
            text_chars=sum(map(len, text.split())),
            image_area_ratio=coverage,
            largest_bitmap_area=largest,
        )
        image = _render(page, width, height, limits) if classifier.is_scan(layout) else None
    finally:
        page.close()
    return Page(number=index + 1, text=text, layout=layout, image=image, positions=positions)


def _positions(
    textpage: Any, bounded: str, text: str, width: float, height: float
) -> PagePositions | None:
    """Each line of ``text`` with its box on the page, top-left origin.

    The cells of each line's first and last characters, which PDFium numbers,
    give the line's ends and height.  ``bounded`` is the text PDFium gave for
    the page's area, which ``text`` cleans: when it holds every character of
    the page, it is PDFium's own text in order, numbered as PDFium numbers; if
    not, PDFium's whole text is read, and when the two texts' lines do not pair
    up the page gets no positions rather than wrong ones.  Two C calls a line,
    made directly: through the wrappers, and a call a word, placing the text
    had doubled the time a page takes to read.
    """
    import pypdfium2.raw as pdfium_c

    count = textpage.count_chars()
    raw = bounded
    if len(bounded) != count:
        # A soft hyphen comes out of the bounded text as U+0002 and out of the
        # range as U+FFFE: the same one character, so written the same way here.
        raw = textpage.get_text_range(0, count).replace("\ufffe", "\x02")
        # The page text is PDFium's with line ends made LF and each line's
        # trailing space (and the page's leading space) cut: the same lines,
        # from the first to the last visible character of each, in order.
        if len(raw) != count or _TEXT_LINE.findall(text) != _RAW_LINE.findall(raw):
            return None
    cell = pdfium_c.FS_RECTF()
    pointer = ctypes.byref(cell)
    handle = textpage.raw
    cell_of = pdfium_c.FPDFText_GetLooseCharBox
    flat: list[float] = []
    for line, numbers in zip(_TEXT_LINE.finditer(text), _RAW_LINE.finditer(raw), strict=True):
        cell_of(handle, numbers.start(), pointer)
        left, low, high = cell.left, cell.bottom, cell.top
        cell_of(handle, numbers.end() - 1, pointer)
        low, high = min(low, cell.bottom), max(high, cell.top)
        flat += (line.start(), line.end(), left, height - high, cell.right, height - low)
    return PagePositions(width, height, tuple(flat), text)


def _image_areas(page: Any, page_area: float) -> tuple[float, float]:
    """The share of the page images cover (capped at 1) and the largest one's area.

    Walked with PDFium's own calls: a wrapper object for each of a page's
    thousands of text and path objects cost more than the page's text.
    """
    import pypdfium2.raw as pdfium_c

    bounds = [ctypes.c_float() for _ in range(4)]
    pointers = [ctypes.byref(value) for value in bounds]
    areas: list[float] = []

    def visit(count: Any, get: Any, parent: Any, nested: bool) -> None:
        for index in range(count(parent)):
            obj = get(parent, index)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
                if pdfium_c.FPDFPageObj_GetBounds(obj, *pointers):
                    left, bottom, right, top = (value.value for value in bounds)
                    areas.append(max(0.0, right - left) * max(0.0, top - bottom))
            elif kind == pdfium_c.FPDF_PAGEOBJ_FORM and not nested:
                # One level down reaches images wrapped in a form XObject,
                # which some scanners emit.
                visit(pdfium_c.FPDFFormObj_CountObjects, pdfium_c.FPDFFormObj_GetObject, obj, True)

    visit(pdfium_c.FPDFPage_CountObjects, pdfium_c.FPDFPage_GetObject, page.raw, False)
    total = sum(areas)
    ratio = min(1.0, total / page_area) if page_area > 0 else 0.0
    return ratio, max(areas, default=0.0)


def _render(page: Any, width: float, height: float, limits: ParseLimits) -> PageImage:
    # Shrink the scale so a huge page size cannot blow the pixel budget.
    scale = min(limits.render_scale, math.sqrt(limits.max_image_pixels / max(width * height, 1.0)))
    bitmap = page.render(scale=scale, grayscale=False)
    try:
        picture = bitmap.to_pil()
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG", optimize=False)
    finally:
        bitmap.close()
    return PageImage(
        data=buffer.getvalue(),
        media_type="image/png",
        width=picture.width,
        height=picture.height,
    )


def _clean(text: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def _title(pdf: Any) -> str | None:
    title = pdf.get_metadata_value("Title")
    return (title.strip() or None) if isinstance(title, str) else None
