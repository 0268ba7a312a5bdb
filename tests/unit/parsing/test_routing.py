import io
import zipfile

import pytest

from ragsage.adapters.parsing import DocumentFormat, route
from ragsage.core.documents import RawSource


def _zip(*names: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, "<x/>")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("filename", "media_type", "content", "expected"),
    [
        ("notes", "text/markdown; charset=utf-8", b"# hi", DocumentFormat.TEXT),
        ("report.bin", "application/pdf", b"whatever", DocumentFormat.PDF),
        ("README.md", None, b"# hi", DocumentFormat.TEXT),
        ("deck.PPTX", None, b"", DocumentFormat.PPTX),
        ("page.htm", None, b"", DocumentFormat.HTML),
        ("photo.JPG", None, b"", DocumentFormat.IMAGE),
        ("upload", None, b"%PDF-1.7\n...", DocumentFormat.PDF),
        ("upload", None, b"\x89PNG\r\n\x1a\n....", DocumentFormat.IMAGE),
        ("upload", None, b"\xff\xd8\xff\xe0....", DocumentFormat.IMAGE),
        ("upload", None, b"II*\x00....", DocumentFormat.IMAGE),
        ("upload", None, b"\n  <!DOCTYPE html><html></html>", DocumentFormat.HTML),
        ("upload", None, b"<html><body>x</body></html>", DocumentFormat.HTML),
        (
            "upload",
            "application/octet-stream",
            "plain words, caf\u00e9".encode(),
            DocumentFormat.TEXT,
        ),
        ("upload", None, b"\x00\x01\x02\xff\xfe binary", DocumentFormat.UNKNOWN),
    ],
)
def test_route_by_label_then_extension_then_bytes(filename, media_type, content, expected):
    assert route(RawSource(content, filename, media_type)) is expected


def test_zip_containers_are_told_apart_by_their_parts():
    docx = _zip("[Content_Types].xml", "word/document.xml")
    pptx = _zip("[Content_Types].xml", "ppt/presentation.xml")
    plain = _zip("data.csv")
    assert route(RawSource(docx, "upload")) is DocumentFormat.DOCX
    assert route(RawSource(pptx, "upload")) is DocumentFormat.PPTX
    assert route(RawSource(plain, "upload")) is DocumentFormat.UNKNOWN


def test_declared_media_type_wins_over_extension():
    source = RawSource(b"<p>x</p>", "page.txt", "text/html")
    assert route(source) is DocumentFormat.HTML


def test_the_two_argument_form_reads_the_bytes_given() -> None:
    # route(source, content), as the adapters reference writes it: the bytes win.
    label_only = RawSource(b"", "upload")
    assert route(label_only, b"%PDF-1.7\n...") is DocumentFormat.PDF
    assert route(label_only, b"\x00\x01\x02\xff\xfe binary") is DocumentFormat.UNKNOWN
    go = b'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(1)\n}\n'
    assert route(RawSource(b"", "notes.txt"), go) is route(RawSource(go, "notes.txt"))
