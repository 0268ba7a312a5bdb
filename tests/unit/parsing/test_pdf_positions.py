"""Where a born-digital PDF's lines sit: the boxes of a quoted sentence, against PDFium's own."""

from __future__ import annotations

from pathlib import Path

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import RawSource
from ragsage.core.geometry import PagePositions
from tests.fixtures.page_boxes import CONTROL, KNOWN, character_cells, iou, span, two_page_manual

SAMPLES = Path(__file__).resolve().parents[3] / "examples" / "docs"


def test_a_quoted_sentence_on_page_two_is_boxed_where_pdfium_draws_it() -> None:
    data = two_page_manual()
    parsed = HeuristicBackend().parse(RawSource(data, "manual.pdf"))
    page = parsed.pages[1]
    assert page.number == 2 and page.positions is not None
    positions = page.positions
    assert (round(positions.width), round(positions.height)) == (595, 842)  # A4 in points
    boxes = positions.boxes(*span(page.text, KNOWN))
    assert len(boxes) == 2  # the sentence runs over two lines
    truth = character_cells(data, 1, KNOWN)
    assert iou(boxes, truth, positions.width, positions.height) >= 0.8
    control = character_cells(data, 1, CONTROL)
    assert iou(boxes, control, positions.width, positions.height) == 0.0
    # The control sentence's own boxes find it, and only it.
    assert iou(positions.boxes(*span(page.text, CONTROL)), control, 595, 842) >= 0.8


def test_every_text_page_of_the_sample_pdf_has_its_lines_placed() -> None:
    data = (SAMPLES / "deployment-guide.pdf").read_bytes()
    parsed = HeuristicBackend().parse(RawSource(data, "deployment-guide.pdf"))
    for page in parsed.pages:
        assert page.positions is not None, page.number
        lines = page.positions.lines
        # One record per non-blank line of the text, each inside the page.
        assert len(lines) == sum(1 for line in page.text.split("\n") if line.strip())
        for line in lines:
            assert page.text[line.start : line.end].strip()
            box = line.box
            assert 0 <= box.left < box.right <= page.positions.width
            assert 0 <= box.top < box.bottom <= page.positions.height


def test_positions_survive_their_stored_form() -> None:
    page = HeuristicBackend().parse(RawSource(two_page_manual(), "manual.pdf")).pages[1]
    assert page.positions is not None
    again = PagePositions.from_dict(page.positions.to_dict(), text=page.text)
    assert again == page.positions
    assert again.boxes(10, 40) == page.positions.boxes(10, 40)
