import io

from PIL import Image

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.core.documents import RawSource
from ragsage.core.pages import PageRoute
from tests.fixtures.make_fixtures import HTML
from tests.unit.parsing.conftest import make_document


def test_born_digital_pdf_reads_every_page_as_text(parse, classifier):
    parsed = parse("born_digital.pdf")
    assert parsed.title == "Operations handbook"
    assert [page.number for page in parsed.pages] == [1, 2, 3]
    for number, page in enumerate(parsed.pages, 1):
        assert f"Chapter {number}: Operating the service" in page.text
        assert "Setting Default Meaning" in page.text
        assert page.image is None
        assert page.layout is not None and page.layout.text_chars > 200
        assert classifier.classify(page) is PageRoute.TEXT


def test_scanned_pdf_page_carries_a_rendered_image_and_routes_to_vision(parse, classifier):
    (page,) = parse("scanned.pdf").pages
    assert page.text == ""
    assert page.layout is not None and page.layout.image_area_ratio == 1.0
    assert page.image is not None and page.image.media_type == "image/png"
    picture = Image.open(io.BytesIO(page.image.data))
    assert picture.size == (page.image.width, page.image.height)
    assert picture.width * picture.height <= HeuristicBackend().limits.max_image_pixels
    assert classifier.classify(page) is PageRoute.VISION


def test_mixed_pdf_routes_each_page_on_its_own(parse, classifier):
    pages = parse("mixed.pdf").pages
    assert [classifier.classify(page) for page in pages] == ["text", "vision", "text"]
    assert [page.image is not None for page in pages] == [False, True, False]
    assert "Chapter 3" in pages[2].text


def test_docx_keeps_headings_lists_and_a_whole_table(parse, backend):
    parsed = parse("handbook.docx")
    assert parsed.title == "Employee handbook"
    chunks = HeuristicBackend().chunk(make_document(), parsed.pages, size=200, overlap=0)
    # Two short sections join, the second's heading written in the text.
    (only,) = chunks
    assert only.heading_path == ("Employee handbook", "Leave")
    leave, expenses = only.text.split("\n\n## Expenses\n\n")
    assert "twenty-five days" in leave
    assert "- Book leave in the portal\n- Tell your team lead" in leave
    assert "| Item | Limit |\n| --- | --- |\n| Hotel | 150 EUR |\n| Meal | 40 EUR |" in expenses
    assert expenses.endswith("Receipts are required for every item.")
    # With joining off each section keeps its own chunk and heading path.
    apart = HeuristicBackend(join_sections=0.0).chunk(
        make_document(), parsed.pages, size=200, overlap=0
    )
    assert [c.heading_path for c in apart] == [
        ("Employee handbook", "Leave"),
        ("Employee handbook", "Expenses"),
    ]


def test_pptx_gives_one_page_per_slide_with_notes_and_table(parse, backend):
    parsed = parse("deck.pptx")
    assert [page.number for page in parsed.pages] == [1, 2]
    first, second = parsed.pages
    assert first.text.startswith("## Quarterly results")
    assert "- Revenue grew twelve percent\n- Churn fell to two percent" in first.text
    assert "Notes: Mention the new enterprise customers." in first.text
    chunks = backend.chunk(make_document(), parsed.pages, size=200, overlap=0)
    table = [c for c in chunks if c.heading_path == ("Regional breakdown",)]
    assert table[0].text == (
        "| Region | Revenue |\n| --- | --- |\n| EMEA | 4.2M |\n| APAC | 3.1M |"
    )
    assert table[0].page_numbers == (2,)


def test_html_drops_page_chrome_and_keeps_structure(parse, backend):
    parsed = parse("release.html")
    assert parsed.title == "Release notes"
    text = parsed.pages[0].text
    assert "SHOULD NOT APPEAR" not in text
    assert "This release brings faster search and a new API." in text
    assert "- Stop the workers.\n- Run the migrations." in text
    assert "```\nragsage migrate --yes\n```" in text
    # Each section apart (no joining), so the paths show the structure read.
    separate = HeuristicBackend(join_sections=0.0)
    chunks = separate.chunk(make_document(), parsed.pages, size=200, overlap=0)
    paths = [chunk.heading_path for chunk in chunks]
    assert paths == [
        ("Release 2.0",),
        ("Release 2.0", "Upgrading"),
        ("Release 2.0", "Compatibility"),
    ]
    assert chunks[2].text.startswith("| Version | Supported |\n| --- | --- |")
    # Each chunk knows the span of the page it was cut from.
    for chunk in chunks:
        assert text[chunk.start_char : chunk.end_char] == chunk.text


def test_html_declared_by_media_type_parses_the_same(backend):
    parsed = backend.parse(RawSource(HTML.encode(), "upload", "text/html; charset=utf-8"))
    assert parsed.title == "Release notes"


def test_an_uploaded_picture_is_one_vision_page(parse, classifier):
    (page,) = parse("scan.png").pages
    assert page.text == ""
    assert page.image is not None and page.image.media_type == "image/png"
    assert (page.image.width, page.image.height) == (620, 877)
    assert classifier.classify(page) is PageRoute.VISION


def test_tiff_is_converted_to_png_for_vision(backend):
    buffer = io.BytesIO()
    Image.new("L", (40, 30), 255).save(buffer, format="TIFF")
    (page,) = backend.parse(RawSource(buffer.getvalue(), "fax.tiff")).pages
    assert page.image is not None and page.image.media_type == "image/png"
    assert Image.open(io.BytesIO(page.image.data)).format == "PNG"


def test_markdown_splits_pages_on_form_feeds(backend):
    source = RawSource(b"# Notes\n\nfirst page\f\nsecond page", "notes.md")
    parsed = backend.parse(source)
    assert parsed.title == "Notes"
    assert [page.text for page in parsed.pages] == ["# Notes\n\nfirst page", "second page"]
    chunks = backend.chunk(make_document(), parsed.pages, size=50, overlap=0)
    assert [(c.text, c.heading_path, c.page_numbers) for c in chunks] == [
        ("first page", ("Notes",), (1,)),
        ("second page", ("Notes",), (2,)),
    ]


def _wrapped_scan(canvas) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader

    from tests.fixtures.make_fixtures import _scan_image

    # Some scanners put the page's bitmap inside a form XObject drawn once.
    canvas.beginForm("scan")
    canvas.drawImage(ImageReader(_scan_image()), 0, 0, width=A4[0], height=A4[1])
    canvas.endForm()
    canvas.doForm("scan")


def _two_pictures(canvas) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader

    from tests.fixtures.make_fixtures import _scan_image

    width, height = A4
    canvas.drawImage(ImageReader(_scan_image()), 0, 0, width=width, height=height / 2)
    canvas.drawImage(ImageReader(_scan_image()), 0, height / 2, width=width / 2, height=height / 2)
    canvas.setFont("Helvetica", 11)
    canvas.drawString(60, height - 40, "Figure 1 shows the rack; figure 2 the cabling.")


def test_a_scan_wrapped_in_a_form_xobject_and_the_share_of_a_page_pictures_cover():
    from reportlab.lib.pagesizes import A4

    from tests.fixtures.make_fixtures import _pdf

    backend = HeuristicBackend()
    wrapped, pictured = backend.parse(
        RawSource(_pdf([_wrapped_scan, _two_pictures]), "scans.pdf")
    ).pages
    assert wrapped.layout is not None and wrapped.layout.image_area_ratio == 1.0
    assert backend.classifier.classify(wrapped) is PageRoute.VISION and wrapped.image is not None
    assert pictured.layout is not None
    assert abs(pictured.layout.image_area_ratio - 0.75) < 1e-3
    assert abs(pictured.layout.largest_bitmap_area - A4[0] * A4[1] / 2) < 1.0
    assert pictured.layout.text_chars == len("Figure1showstherack;figure2thecabling.")
