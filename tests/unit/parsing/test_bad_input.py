import io
import os
import time
import zipfile

import pytest

from ragsage.adapters.parsing import HeuristicBackend, ParseLimits
from ragsage.core.documents import RawSource
from ragsage.core.errors import EmptyDocument, ParseError, UnsupportedFormat
from tests.fixtures.pictures import drawn, jpeg_claiming, png_claiming


def _fails(backend, content, filename, error=ParseError, media_type=None):
    started = time.perf_counter()
    with pytest.raises(error) as caught:
        backend.parse(RawSource(content, filename, media_type))
    assert time.perf_counter() - started < 10  # bounded; benchmarks live in bench/
    assert str(caught.value).startswith(f"{filename}: ")
    return str(caught.value)


def test_truncated_pdf(backend, fixture_files):
    data = fixture_files["born_digital.pdf"].read_bytes()
    message = _fails(backend, data[: len(data) // 3], "report.pdf")
    assert "corrupt or truncated" in message


def test_password_protected_pdf(backend, fixture_files):
    data = fixture_files["encrypted.pdf"].read_bytes()
    assert "password" in _fails(backend, data, "secret.pdf")


def test_zip_that_claims_to_be_docx(backend):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.txt", "not a word document")
    message = _fails(backend, buffer.getvalue(), "contract.docx")
    assert "not a valid DOCX file" in message


def test_docx_that_is_not_a_zip_at_all(backend):
    assert "corrupt zip" in _fails(backend, b"PK\x03\x04garbage", "contract.docx")


def test_zip_bomb_is_refused_before_inflating(backend):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", b"\0" * (20 * 1024 * 1024))
    assert len(buffer.getvalue()) < 1024 * 1024
    assert "zip bomb" in _fails(backend, buffer.getvalue(), "bomb.docx")


def test_empty_file(backend):
    assert "empty" in _fails(backend, b"", "nothing.pdf", EmptyDocument)


def test_whitespace_only_text_has_no_content(backend):
    _fails(backend, b"  \n\n \f \n", "blank.txt", EmptyDocument)


def test_binary_garbage_named_txt(backend):
    assert "not valid UTF-8 text" in _fails(backend, os.urandom(2048) + b"\xff", "notes.txt")


def test_nul_bytes_in_text(backend):
    assert "NUL" in _fails(backend, b"hello\x00world", "notes.txt")


def test_unknown_binary(backend):
    _fails(backend, b"\x00\x01\x02\x03" * 64, "blob.bin", UnsupportedFormat)


def test_deeply_nested_html(backend):
    html = "<html><body>" + "<div>" * 10_000 + "deep" + "</div>" * 10_000 + "</body></html>"
    assert "nested deeper than" in _fails(backend, html.encode(), "deep.html")


def test_oversized_upload_is_refused_before_reading():
    backend = HeuristicBackend(limits=ParseLimits(max_bytes=1024))
    assert "exceeds the limit" in _fails(backend, b"a" * 2048, "big.txt")


def test_too_many_pages():
    backend = HeuristicBackend(limits=ParseLimits(max_pages=2))
    assert "pages" in _fails(backend, b"one\ftwo\fthree", "long.txt")


def test_picture_over_the_pixel_budget(fixture_files):
    backend = HeuristicBackend(limits=ParseLimits(max_image_pixels=10_000))
    assert "pixels" in _fails(backend, fixture_files["scan.png"].read_bytes(), "scan.png")


def test_corrupt_picture(backend):
    data = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    assert "not a readable image" in _fails(backend, data, "photo.png")


@pytest.mark.parametrize("claim", [png_claiming, jpeg_claiming], ids=["png", "jpeg"])
def test_a_header_claiming_400_megapixels(backend, claim):
    assert "exceeds the limit of 25000000 pixels" in _fails(backend, claim(), "huge.png")


@pytest.mark.parametrize("kind", ["GIF", "BMP", "WEBP", "EPS"])
def test_a_picture_format_not_read_is_refused_unopened_whatever_its_name(backend, kind):
    assert "not a PNG, JPEG or TIFF image" in _fails(backend, drawn(kind), "photo.png")


def test_binary_bytes_named_as_html_or_python_are_not_indexed_as_text(backend):
    picture = drawn("PNG")
    assert "not an HTML page (contains NUL bytes)" in _fails(backend, picture, "page.html")
    assert "not a source file (contains NUL bytes)" in _fails(backend, picture, "tool.py")
    pdf = b"%PDF-1.4\n%\x93\x8c\n1 0 obj << >> endobj\n"
    assert "not an HTML page (the bytes are a PDF)" in _fails(backend, pdf, "page.html")


def test_limits_reject_nonsense():
    with pytest.raises(ValueError, match="max_pages"):
        ParseLimits(max_pages=0)
