"""Every format named and labelled as every other, where the reading decision is made.

A client names and labels its upload; the bytes may be anything.  One real
small sample of each format the readers know, and hostile ones they do not
(GIF, BMP, WebP, EPS, and headers claiming 400 megapixels), are each given the
file name and the media type of every format, and run through the parser a
worker uses and the page renderer the API uses.  Every outcome must be a
correct read or a refusal naming the file: never another exception, never a
picture decoder outside PNG, JPEG and TIFF, and never a page drawn for bytes
the parser would not read.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest
from PIL import Image

from ragsage.adapters.parsing import HeuristicBackend
from ragsage.adapters.parsing.page_images import render_page
from ragsage.core.documents import RawSource
from ragsage.core.errors import DocumentError, InvalidRequest
from ragsage.core.pages import ParsedDocument
from tests.fixtures.pictures import (
    drawn,
    gif_claiming,
    jpeg_claiming,
    png_claiming,
    watch_decoders,
)

# The word every sample that carries text carries, so a read can be checked.
MARKER = "quokka"
PICTURE = (40, 30)


@dataclass(frozen=True)
class Label:
    extension: str
    media_type: str


LABELS = {
    "pdf": Label(".pdf", "application/pdf"),
    "docx": Label(
        ".docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    ),
    "pptx": Label(
        ".pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    ),
    "html": Label(".html", "text/html"),
    "markdown": Label(".md", "text/markdown"),
    "text": Label(".txt", "text/plain"),
    "python": Label(".py", "text/x-python"),
    "png": Label(".png", "image/png"),
    "jpeg": Label(".jpg", "image/jpeg"),
    "tiff": Label(".tif", "image/tiff"),
    "gif": Label(".gif", "image/gif"),
    "bmp": Label(".bmp", "image/bmp"),
    "webp": Label(".webp", "image/webp"),
    "eps": Label(".eps", "application/postscript"),
}
# Formats that have pages to draw, and those whose samples are pictures.
PICTURES = frozenset({"png", "jpeg", "tiff"})
DRAWABLE = PICTURES | {"pdf"}


def _pdf() -> bytes:
    from tests.fixtures.make_fixtures import _pdf as pdf_of

    return pdf_of([lambda c: c.drawString(72, 720, f"The {MARKER} smiles on Rottnest Island.")])


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph(f"The {MARKER} smiles on Rottnest Island.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pptx() -> bytes:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = f"The {MARKER}"
    slide.placeholders[1].text_frame.text = "It smiles on Rottnest Island."
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def _eps() -> bytes:
    # A real EPS, with the marker in its title so a read as text can be checked.
    data = drawn("EPS", PICTURE)
    return data.replace(b"\n", f"\n%%Title: {MARKER}\n".encode(), 1)


def _samples() -> dict[str, bytes]:
    return {
        "pdf": _pdf(),
        "docx": _docx(),
        "pptx": _pptx(),
        "html": (
            f"<!doctype html><html><head><title>The {MARKER}</title></head><body><main>"
            f"<h1>The {MARKER}</h1><p>It smiles on Rottnest Island.</p></main></body></html>"
        ).encode(),
        "markdown": f"# The {MARKER}\n\nIt smiles on Rottnest Island.\n".encode(),
        "text": f"The {MARKER} smiles on Rottnest Island.\n".encode(),
        "python": f'def {MARKER}() -> str:\n    return "smiles"\n'.encode(),
        "png": drawn("PNG", PICTURE),
        "jpeg": drawn("JPEG", PICTURE),
        "tiff": drawn("TIFF", PICTURE),
        "gif": drawn("GIF", PICTURE),
        "bmp": drawn("BMP", PICTURE),
        "webp": drawn("WEBP", PICTURE),
        "eps": _eps(),
        "png-bomb": png_claiming(),
        "jpeg-bomb": jpeg_claiming(),
        "gif-bomb": gif_claiming(),
    }


SAMPLES = _samples()


def _sources(label: Label, data: bytes) -> list[RawSource]:
    """The sample named as the format, labelled as it, and both."""
    named = f"upload{label.extension}"
    return [
        RawSource(data, named, label.media_type),
        RawSource(data, named, None),
        RawSource(data, "upload", label.media_type),
    ]


def _read_correctly(sample: str, parsed: ParsedDocument) -> bool:
    """Whether a successful parse read what the sample holds."""
    if sample in PICTURES:
        images = [page.image for page in parsed.pages if page.image is not None]
        return [(image.width, image.height) for image in images] == [PICTURE]
    return MARKER in " ".join(page.text for page in parsed.pages).lower()


def _refusal(exc: Exception, source: RawSource) -> bool:
    """A refusal the caller may read: one of ours, naming the file first."""
    return isinstance(exc, DocumentError | InvalidRequest) and str(exc).startswith(
        f"{source.filename}: "
    )


def _parse_outcome(backend: HeuristicBackend, sample: str, source: RawSource) -> str | None:
    """None when the parse read the sample or refused it properly; else what went wrong."""
    try:
        parsed = backend.parse(source)
    except Exception as exc:
        return None if _refusal(exc, source) else f"parse raised {exc!r}"
    return None if _read_correctly(sample, parsed) else "parse read something else"


def _render_outcome(sample: str, source: RawSource, parsed_ok: bool) -> str | None:
    """None when the page was drawn for a drawable sample the parser reads, or refused."""
    try:
        png = render_page(
            source.content,
            media_type=source.media_type,
            filename=source.filename,
            number=1,
            width=100,
        )
    except Exception as exc:
        return None if _refusal(exc, source) else f"render raised {exc!r}"
    if sample not in DRAWABLE or not parsed_ok:
        return "render drew a page the parser does not read"
    with Image.open(io.BytesIO(png), formats=["PNG"]) as shown:
        # A picture is shrunk to the width, never enlarged.
        expected = 100 if sample == "pdf" else PICTURE[0]
        return None if shown.width == expected else f"render drew {shown.size}"


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_a_sample_named_as_any_format_is_read_correctly_or_refused_by_name(
    sample: str, backend: HeuristicBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = watch_decoders(monkeypatch)
    wrong = []
    for format_name, label in LABELS.items():
        for source in _sources(label, SAMPLES[sample]):
            case = f"{sample} as {format_name} ({source.filename}, {source.media_type})"
            parsed = _parse_outcome(backend, sample, source)
            if parsed is not None:
                wrong.append(f"{case}: {parsed}")
            drawn_page = _render_outcome(sample, source, parsed_ok=parsed is None)
            if drawn_page is not None:
                wrong.append(f"{case}: {drawn_page}")
            if used:
                wrong.append(f"{case}: decoders outside the allow-list ran: {sorted(set(used))}")
                used.clear()
    assert not wrong, "\n".join(wrong)
