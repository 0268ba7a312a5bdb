"""Offline parse, classify, chunk and contextualize adapters."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath

from ragsage.core.chunks import Chunk, make_chunk
from ragsage.core.documents import Document, RawSource
from ragsage.core.errors import EmptyDocument, ParseError, UnsupportedFormat
from ragsage.core.pages import Page, PageImage, PageRoute, ParsedDocument

_TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text", ".csv", ".log", ""})
_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
}
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


class FakeDocumentParser:
    """Reads text sources into pages (one per form feed) and images into a vision page.

    It reads only plain text and Markdown, and says so for anything else rather
    than guessing: a PDF or DOCX is an :class:`UnsupportedFormat` here.
    """

    def parse(self, source: RawSource) -> ParsedDocument:
        if not source.content:
            raise EmptyDocument(source.filename, "the file is empty (0 bytes)")
        suffix = PurePath(source.filename).suffix.lower()
        media_type = (source.media_type or "").lower()
        if media_type.startswith("image/") or suffix in _IMAGE_TYPES:
            image = PageImage(
                data=source.content, media_type=media_type or _IMAGE_TYPES.get(suffix, "image/png")
            )
            return ParsedDocument(pages=(Page(number=1, text="", image=image),))
        declared_text = media_type.startswith("text/") or (
            not media_type and suffix in _TEXT_SUFFIXES
        )
        try:
            text = source.content.decode("utf-8")
        except UnicodeDecodeError as exc:
            if declared_text:
                raise ParseError(
                    source.filename, f"not valid UTF-8 text (byte {exc.start} cannot be decoded)"
                ) from exc
            raise UnsupportedFormat(
                source.filename, f"unsupported format {media_type or suffix or 'unknown'!r}"
            ) from exc
        if "\x00" in text:
            raise ParseError(source.filename, "binary content (NUL bytes) in a text file")
        pages = tuple(
            Page(number=number, text=block.strip())
            for number, block in enumerate(text.split("\f"), start=1)
        )
        if not any(page.text for page in pages):
            raise EmptyDocument(source.filename, "the file contains only whitespace")
        return ParsedDocument(pages=pages, title=_first_heading(text))


def _first_heading(text: str) -> str | None:
    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            return match.group(2)
    return None


class FakePageClassifier:
    """Routes a page to vision when its text layer is missing or image-dominated."""

    def classify(self, page: Page) -> PageRoute:
        if page.image is None:
            return PageRoute.TEXT
        layout = page.layout
        if layout is not None:
            thin_text = layout.text_chars < 24
            if thin_text and layout.image_area_ratio >= 0.5:
                return PageRoute.VISION
            return PageRoute.TEXT if layout.text_chars > 0 else PageRoute.VISION
        return PageRoute.TEXT if page.text.strip() else PageRoute.VISION


class FakeChunker:
    """Windows of ``size`` words with ``overlap`` words repeated, headings tracked.

    Words stand in for tokens; what the pipeline relies on — dense ordinals,
    stable ids, page numbers and heading paths — is real.
    """

    def chunk(
        self, document: Document, pages: Sequence[Page], *, size: int, overlap: int
    ) -> Sequence[Chunk]:
        if size <= 0 or not 0 <= overlap < size:
            raise ValueError(f"need size > 0 and 0 <= overlap < size; got {size}, {overlap}")
        chunks: list[Chunk] = []
        for page in pages:
            for heading_path, words in _sections(page.text):
                start = 0
                while start < len(words):
                    window = words[start : start + size]
                    chunks.append(
                        make_chunk(
                            document,
                            len(chunks),
                            " ".join(window),
                            heading_path=heading_path,
                            page_numbers=(page.number,),
                        )
                    )
                    if start + size >= len(words):
                        break
                    start += size - overlap
        return chunks


def _sections(text: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """Split Markdown into (heading path, words) runs, one per section."""
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    path: list[tuple[int, str]] = []
    words: list[str] = []

    def flush() -> None:
        if words:
            sections.append((tuple(title for _, title in path), list(words)))
            words.clear()

    for line in text.splitlines():
        match = _HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            path[:] = [(lvl, title) for lvl, title in path if lvl < level]
            path.append((level, match.group(2)))
        else:
            words.extend(line.split())
    flush()
    return sections


class FakeContextualizer:
    """Prepends the document title and section path to the chunk's embed text."""

    async def contextualize(self, document: Document, chunk: Chunk, *, full_text: str) -> str:
        header = f"Document: {document.title}"
        if chunk.heading_path:
            header += "\nSection: " + " > ".join(chunk.heading_path)
        return f"{header}\n\n{chunk.text}"
