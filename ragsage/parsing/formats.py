"""Which reader a source goes to: media type, then extension, then its first bytes."""

from __future__ import annotations

import codecs
import io
import zipfile
from enum import StrEnum
from pathlib import PurePosixPath

from ragsage.types import RawSource


class DocumentFormat(StrEnum):
    """The parse path a source is routed to.

    ``TEXT`` covers plain text and Markdown, which are both read as-is;
    ``PYTHON`` is Python source, read into headings that follow its structure;
    ``IMAGE`` is an uploaded picture (PNG, JPEG, TIFF) that only a vision model
    can read; ``UNKNOWN`` is everything the backend refuses.
    """

    TEXT = "text"
    PDF = "pdf"
    DOCX = "docx"
    PPTX = "pptx"
    HTML = "html"
    IMAGE = "image"
    PYTHON = "python"
    UNKNOWN = "unknown"


_MEDIA_TYPES: dict[str, DocumentFormat] = {
    "text/plain": DocumentFormat.TEXT,
    "text/markdown": DocumentFormat.TEXT,
    "text/x-markdown": DocumentFormat.TEXT,
    "application/pdf": DocumentFormat.PDF,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": (
        DocumentFormat.DOCX
    ),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": (
        DocumentFormat.PPTX
    ),
    "text/html": DocumentFormat.HTML,
    "application/xhtml+xml": DocumentFormat.HTML,
    "image/png": DocumentFormat.IMAGE,
    "image/jpeg": DocumentFormat.IMAGE,
    "image/tiff": DocumentFormat.IMAGE,
    "text/x-python": DocumentFormat.PYTHON,
    "text/x-script.python": DocumentFormat.PYTHON,
}

_EXTENSIONS: dict[str, DocumentFormat] = {
    ".txt": DocumentFormat.TEXT,
    ".text": DocumentFormat.TEXT,
    ".md": DocumentFormat.TEXT,
    ".markdown": DocumentFormat.TEXT,
    ".pdf": DocumentFormat.PDF,
    ".docx": DocumentFormat.DOCX,
    ".pptx": DocumentFormat.PPTX,
    ".html": DocumentFormat.HTML,
    ".htm": DocumentFormat.HTML,
    ".xhtml": DocumentFormat.HTML,
    ".png": DocumentFormat.IMAGE,
    ".jpg": DocumentFormat.IMAGE,
    ".jpeg": DocumentFormat.IMAGE,
    ".tif": DocumentFormat.IMAGE,
    ".tiff": DocumentFormat.IMAGE,
    ".py": DocumentFormat.PYTHON,
    ".pyi": DocumentFormat.PYTHON,
}

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
)

# Enough of the head to judge text-ness without decoding a 100 MB upload.
_SNIFF_BYTES = 64 * 1024


def route(source: RawSource) -> DocumentFormat:
    """Resolve ``source`` to the format whose reader should parse it.

    The declared media type is trusted first, then the filename extension, then
    the leading bytes; bytes that read as UTF-8 text fall back to ``TEXT`` so an
    unlabelled note still ingests, and anything else is ``UNKNOWN``.
    """
    declared = _from_media_type(source.media_type)
    by_name = _EXTENSIONS.get(PurePosixPath(source.filename.lower()).suffix)
    # Clients label source files text/plain as often as not; the name is more
    # specific.  An explicit Markdown label is a choice, and stands.
    plain = (source.media_type or "").split(";")[0].strip().lower() == "text/plain"
    if plain and by_name is DocumentFormat.PYTHON:
        return by_name
    if declared is not None:
        return declared
    if by_name is not None:
        return by_name
    return sniff(source.content)


def sniff(content: bytes) -> DocumentFormat:
    """The format the bytes themselves announce, ignoring any name or label."""
    head = content[:_SNIFF_BYTES]
    if head.startswith(b"%PDF-"):
        return DocumentFormat.PDF
    if image_media_type(head) is not None:
        return DocumentFormat.IMAGE
    if head.startswith(b"PK\x03\x04"):
        return _office_kind(content)
    if _looks_like_html(head):
        return DocumentFormat.HTML
    if looks_like_text(head):
        return DocumentFormat.TEXT
    return DocumentFormat.UNKNOWN


def image_media_type(head: bytes) -> str | None:
    """The media type of a PNG, JPEG or TIFF by its magic bytes, else ``None``."""
    for magic, media_type in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media_type
    return None


def looks_like_text(head: bytes) -> bool:
    """Whether bytes decode as UTF-8 with no NULs and hardly any control characters."""
    if not head or b"\x00" in head:
        return False
    # An incremental decoder tolerates a multi-byte character cut by the sample.
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f")
    return controls <= len(text) // 100


def _from_media_type(media_type: str | None) -> DocumentFormat | None:
    if not media_type:
        return None
    return _MEDIA_TYPES.get(media_type.split(";", 1)[0].strip().lower())


def _looks_like_html(head: bytes) -> bool:
    start = head[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return start.startswith((b"<!doctype html", b"<html"))


def _office_kind(content: bytes) -> DocumentFormat:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return DocumentFormat.UNKNOWN
    if "[Content_Types].xml" not in names:
        return DocumentFormat.UNKNOWN
    if any(name.startswith("word/") for name in names):
        return DocumentFormat.DOCX
    if any(name.startswith("ppt/") for name in names):
        return DocumentFormat.PPTX
    return DocumentFormat.UNKNOWN
