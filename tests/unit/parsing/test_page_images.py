"""Page pictures: bounded in size and time, and clear about what cannot be drawn."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.adapters.parsing.page_images import MAX_WIDTH, NoSuchPage, render_page
from ragsage.core.errors import ParseError
from tests.fixtures.make_fixtures import born_digital_pdf, scan_png
from tests.fixtures.page_boxes import two_page_manual
from tests.fixtures.pictures import drawn, gif_claiming, jpeg_claiming, png_claiming

PDF = "application/pdf"


def _shown(png: bytes) -> Image.Image:
    picture = Image.open(io.BytesIO(png))
    assert picture.format == "PNG"
    return picture


def _dotted_page(dots: int) -> bytes:
    """A page of thousands of small filled circles, like a scatter plot or a map."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen.canvas import Canvas

    rng = random.Random(3)
    buffer = io.BytesIO()
    canvas = Canvas(buffer, pagesize=A4)
    for _ in range(dots):
        canvas.setFillGray(rng.random())
        canvas.circle(rng.random() * A4[0], rng.random() * A4[1], 2, fill=1)
    canvas.showPage()
    canvas.save()
    return buffer.getvalue()


def test_a_pdf_page_is_drawn_at_the_asked_width_with_its_ink_where_the_text_is():
    png = render_page(two_page_manual(), media_type=PDF, filename="m.pdf", number=2, width=500)
    picture = _shown(png).convert("L")
    assert picture.width == 500 and 705 <= picture.height <= 710  # A4's proportions
    assert picture.getextrema()[0] < 100  # there is ink
    assert picture.crop((0, 0, 500, 20)).getextrema()[0] > 240  # the top margin is blank


def test_width_is_capped_and_a_giant_page_stays_within_the_pixel_budget():
    png = render_page(born_digital_pdf(1), media_type=PDF, filename="b.pdf", number=1, width=9999)
    assert _shown(png).width == MAX_WIDTH
    from reportlab.pdfgen.canvas import Canvas

    buffer = io.BytesIO()
    poster = Canvas(buffer, pagesize=(14_400, 14_400))  # 200 inches square, PDF's largest
    poster.drawString(100, 100, "A poster")
    poster.showPage()
    poster.save()
    limits = ParseLimits(max_image_pixels=400_000)
    drawn = _shown(
        render_page(buffer.getvalue(), media_type=PDF, filename="p.pdf", number=1, limits=limits)
    )
    assert drawn.width * drawn.height <= 400_000 * 1.01


def test_a_page_that_takes_too_long_to_draw_is_given_up_with_a_clear_error():
    busy = _dotted_page(5_000)
    assert _shown(render_page(busy, media_type=PDF, filename="plot.pdf", number=1))
    with pytest.raises(ParseError, match=r"plot.pdf: page 1 takes longer to draw than .* 0 s"):
        render_page(busy, media_type=PDF, filename="plot.pdf", number=1, draw_seconds=0.0)


def test_pages_that_are_not_there_and_files_that_are_not_pictures_say_so():
    manual = two_page_manual()
    with pytest.raises(NoSuchPage, match="has 2 pages, not 3"):
        render_page(manual, media_type=PDF, filename="m.pdf", number=3)
    with pytest.raises(NoSuchPage, match="only PDF and image documents"):
        render_page(b"# Notes\n", media_type="text/markdown", filename="n.md", number=1)
    with pytest.raises(ParseError, match="not a readable PDF"):
        render_page(manual[: len(manual) // 3], media_type=PDF, filename="cut.pdf", number=1)
    with pytest.raises(ParseError, match=r"^x.png: not a readable image"):
        render_page(
            b"\x89PNG\r\n\x1a\n garbage", media_type="image/png", filename="x.png", number=1
        )


def test_an_uploaded_picture_is_its_one_page_shrunk_to_the_width():
    scan = scan_png()
    shown = _shown(render_page(scan, media_type="image/png", filename="s.png", number=1, width=400))
    assert shown.width == 400
    with pytest.raises(NoSuchPage, match="one page, not 2"):
        render_page(scan, media_type="image/png", filename="s.png", number=2)


@pytest.mark.parametrize("claim", [png_claiming, jpeg_claiming], ids=["png", "jpeg"])
def test_a_header_claiming_400_megapixels_is_refused_naming_the_limit(claim):
    # Pillow itself refuses this size before our budget is read: that refusal too
    # is an error naming the file and the limit, not Pillow's own exception.
    with pytest.raises(ParseError, match=r"^x.png: image exceeds the limit of 25000000 pixels"):
        render_page(claim(), media_type="image/png", filename="x.png", number=1)


def test_a_picture_is_drawn_only_when_its_bytes_are_the_png_jpeg_or_tiff_it_is_called():
    # Other formats are never opened, whatever the label says.
    for kind in ("GIF", "BMP", "WEBP", "EPS"):
        with pytest.raises(ParseError, match=r"^x.png: the bytes are not the PNG, JPEG or TIFF"):
            render_page(drawn(kind), media_type="image/png", filename="x.png", number=1)
    with pytest.raises(ParseError, match=r"^x.png: the bytes are not the PNG, JPEG or TIFF"):
        render_page(gif_claiming(), media_type="image/png", filename="x.png", number=1)
    # A PDF named as a picture, and a picture named as a PDF, are refused alike.
    with pytest.raises(ParseError, match=r"^m.png: the bytes are not the PNG"):
        render_page(two_page_manual(), media_type="image/png", filename="m.png", number=1)
    with pytest.raises(ParseError, match=r"^s.pdf: the bytes are not the PDF"):
        render_page(scan_png(), media_type=PDF, filename="s.pdf", number=1)
    # A JPEG called a PNG is still a picture ragsage reads, and is drawn.
    assert _shown(render_page(drawn("JPEG"), media_type="image/png", filename="j.png", number=1))
