"""Which reader a source goes to: media type, then extension, then its first bytes."""

from __future__ import annotations

import codecs
import io
import zipfile
from dataclasses import replace
from enum import StrEnum
from pathlib import PurePosixPath

from ragsage.adapters.parsing.detect import detect_language
from ragsage.adapters.parsing.languages import BY_NAME, MEDIA_TYPES, Language, language_for_filename
from ragsage.core.documents import RawSource
from ragsage.core.errors import ParseError


class DocumentFormat(StrEnum):
    """The parse path a source is routed to.

    ``TEXT`` covers plain text and Markdown, which are both read as-is;
    ``PYTHON`` is Python source, read into headings that follow its structure;
    ``CODE`` is source in another language tree-sitter reads the same way
    (:func:`source_language` says which);
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
    CODE = "code"
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
_PDF_MAGIC = b"%PDF-"


def route(source: RawSource, content: bytes | None = None) -> DocumentFormat:
    """Resolve ``source`` to the format whose reader should parse it.

    ``content``, when given, is the bytes to read instead of ``source.content``
    (the two-argument form of the adapters reference).

    The declared media type is trusted first, then the filename extension, then
    the leading bytes; bytes that read as UTF-8 text fall back to ``TEXT`` so an
    unlabelled note still ingests, and anything else is ``UNKNOWN``.  Text that
    is not explicitly Markdown and is clearly source code (``notes.txt``
    holding a Go file) goes to the code reader of its language.
    """
    if content is not None and content is not source.content:
        source = replace(source, content=content)
    declared = _from_media_type(source.media_type)
    by_name = _EXTENSIONS.get(PurePosixPath(source.filename.lower()).suffix)
    # Clients label source files text/plain (or leave the type out) as often as
    # not; the name is more specific.  An explicit Markdown label is a choice,
    # and stands.
    plain = _bare_media_type(source.media_type) == "text/plain"
    named = _named_language(source)
    if named is not None and (declared is None or plain):
        return _code_format(named)
    if declared is not None:
        chosen = declared
    elif by_name is not None:
        chosen = by_name
    else:
        chosen = sniff(source.content)
    if chosen is DocumentFormat.TEXT and not _is_markdown(source):
        detected = detect_language(_head_text(source.content))
        if detected is not None:
            return _code_format(BY_NAME[detected])
    return chosen


def source_language(source: RawSource) -> Language | None:
    """The programming language of a source file: its label, its name, then its text."""
    named = _named_language(source)
    if named is not None and named.name == "c" and source.filename.lower().endswith(".h"):
        # A header may be C or C++; its text says which.
        detected = detect_language(_head_text(source.content))
        return BY_NAME["cpp"] if detected == "cpp" else named
    if named is not None:
        return named
    detected = detect_language(_head_text(source.content))
    return BY_NAME[detected] if detected is not None else None


def _named_language(source: RawSource) -> Language | None:
    by_type = MEDIA_TYPES.get(_bare_media_type(source.media_type))
    if by_type is not None:
        return BY_NAME[by_type]
    return language_for_filename(source.filename)


def _code_format(language: Language) -> DocumentFormat:
    return DocumentFormat.PYTHON if language.name == "python" else DocumentFormat.CODE


def _bare_media_type(media_type: str | None) -> str:
    return (media_type or "").split(";", 1)[0].strip().lower()


def _is_markdown(source: RawSource) -> bool:
    suffix = PurePosixPath(source.filename.lower()).suffix
    return suffix in (".md", ".markdown") or "markdown" in _bare_media_type(source.media_type)


def _head_text(content: bytes) -> str:
    return content[:_SNIFF_BYTES].decode("utf-8", errors="ignore")


def sniff(content: bytes) -> DocumentFormat:
    """The format the bytes themselves announce, ignoring any name or label."""
    head = content[:_SNIFF_BYTES]
    if head.startswith(_PDF_MAGIC):
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


def refuse_binary(source: RawSource, kind: str) -> None:
    """Refuse bytes that are plainly not text: a NUL in the head, or a PDF header.

    Readers that decode leniently (HTML, source code in Latin-1) would
    otherwise index a picture, an archive or a PDF named ``.html`` as garbage
    text.  Binary formats hold a NUL within their first bytes (a length, a
    version, a zip header) and text never does; a small PDF may hold none, so
    its header is checked too.
    """
    head = source.content[:_SNIFF_BYTES]
    if b"\x00" in head:
        raise ParseError(source.filename, f"not {kind} (contains NUL bytes)")
    if head.startswith(_PDF_MAGIC):
        raise ParseError(source.filename, f"not {kind} (the bytes are a PDF)")


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
