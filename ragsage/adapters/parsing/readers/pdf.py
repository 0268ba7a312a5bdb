"""PDF through pypdfium2: per-page text, a measured layout, and a render for scans."""

from __future__ import annotations

import io
import math
import re
from typing import TYPE_CHECKING, Any

from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.core.errors import ParseError
from ragsage.core.types import (
    Box,
    Page,
    PageImage,
    PageLayout,
    PagePositions,
    ParsedDocument,
    RawSource,
    TextLine,
)

if TYPE_CHECKING:
    from ragsage.adapters.parsing.classifier import LayoutPageClassifier

_WORD = re.compile(r"\S+")
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
            text = _clean(textpage.get_text_bounded())
            positions = _positions(textpage, text, width, height) if text else None
        finally:
            textpage.close()
        coverage, largest = _image_areas(page, width * height)
        layout = PageLayout(
            text_chars=sum(1 for ch in text if not ch.isspace()),
            image_area_ratio=coverage,
            largest_bitmap_area=largest,
        )
        image = _render(page, width, height, limits) if classifier.is_scan(layout) else None
    finally:
        page.close()
    return Page(number=index + 1, text=text, layout=layout, image=image, positions=positions)


def _positions(textpage: Any, text: str, width: float, height: float) -> PagePositions | None:
    """Each line of ``text`` with the box PDFium gives its characters, top-left origin.

    PDFium numbers the page's characters; the page text is those characters
    cleaned (line ends, trailing spaces), so each character of the page text is
    paired with its number.  When the characters PDFium counts do not clean to the
    page text (text outside the page's bounds), the page gets no positions
    rather than wrong ones.
    """
    count = textpage.count_chars()
    raw = textpage.get_text_range(0, count)
    if len(raw) != count:
        return None  # characters outside the basic plane: the numbering no longer lines up
    numbers = _numbered(raw, text) if _clean(raw) == text else None
    if numbers is None:
        return None
    lines: list[TextLine] = []
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        if line.strip():
            first, last = numbers[start], numbers[end - 1]
            counted = textpage.count_rects(first, last - first + 1)
            rects = [textpage.get_rect(i) for i in range(counted)]
            if rects:
                # The line is the union of its words' character cells (PDFium's
                # line rectangles, tighter, only when it has no word).
                words, (low, high) = _words(textpage, line, start, numbers)
                if words:
                    left, right = min(w[2] for w in words), max(w[3] for w in words)
                else:
                    left, right = min(r[0] for r in rects), max(r[2] for r in rects)
                    low, high = min(r[1] for r in rects), max(r[3] for r in rects)
                box = Box(left, height - high, right, height - low)
                lines.append(TextLine(start, end, box, words))
        start = end + 1
    return PagePositions(width=width, height=height, lines=tuple(lines))


def _words(
    textpage: Any, line: str, start: int, numbers: list[int]
) -> tuple[tuple[tuple[int, int, float, float], ...], tuple[float, float]]:
    """Each word of a line (its span in the page text, left and right edges), and
    the lowest and highest point of their characters' cells (PDF coordinates)."""
    words = []
    low, high = math.inf, -math.inf
    for match in _WORD.finditer(line):
        first, last = numbers[start + match.start()], numbers[start + match.end() - 1]
        left, bottom, _, top = textpage.get_charbox(first, loose=True)
        _, end_bottom, right, end_top = textpage.get_charbox(last, loose=True)
        low, high = min(low, bottom, end_bottom), max(high, top, end_top)
        words.append((start + match.start(), start + match.end(), left, right))
    return tuple(words), (low, high)


def _numbered(raw: str, cleaned: str) -> list[int] | None:
    """Each character of ``cleaned`` (:func:`_clean` of ``raw``): its index in ``raw``.

    Cleaning only drops characters (trailing spaces, NULs, the LF of a CRLF)
    and turns a CR into an LF, so walking both texts together pairs them.
    """
    numbers: list[int] = []
    index = 0
    for char in cleaned:
        while index < len(raw) and not (
            raw[index] == char or (char == "\n" and raw[index] == "\r")
        ):
            index += 1
        if index == len(raw):
            return None
        numbers.append(index)
        index += 1
    return numbers


def _image_areas(page: Any, page_area: float) -> tuple[float, float]:
    """The share of the page images cover (capped at 1) and the largest one's area."""
    import pypdfium2.raw as pdfium_c

    total = largest = 0.0
    # Depth 2 reaches images wrapped in a form XObject, which some scanners emit.
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        left, bottom, right, top = obj.get_bounds()
        area = max(0.0, right - left) * max(0.0, top - bottom)
        total += area
        largest = max(largest, area)
    ratio = min(1.0, total / page_area) if page_area > 0 else 0.0
    return ratio, largest


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
