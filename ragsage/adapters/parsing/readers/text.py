"""Plain text and Markdown: read as-is, one page per form-feed-separated block."""

from __future__ import annotations

import re

from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.core.errors import ParseError
from ragsage.core.types import Page, ParsedDocument, RawSource

_TITLE = re.compile(r"^ {0,3}#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# How much of the head is searched for a NUL: binary formats hold one within
# their first few bytes (a length, a version, a zip header), text never does.
_BINARY_SNIFF = 64 * 1024


def read_text(source: RawSource, limits: ParseLimits) -> ParsedDocument:
    """Decode UTF-8 (a BOM is allowed) and split pages on form feeds."""
    try:
        text = source.content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(
            source.filename, f"not valid UTF-8 text (undecodable byte at offset {exc.start})"
        ) from exc
    if "\x00" in text:
        raise ParseError(source.filename, "not valid UTF-8 text (contains NUL bytes)")
    parts = text.replace("\r\n", "\n").split("\f")
    if len(parts) > limits.max_pages:
        raise ParseError(
            source.filename, f"more than {limits.max_pages} pages (form feeds); limit exceeded"
        )
    pages = tuple(Page(number=i, text=part.strip("\n")) for i, part in enumerate(parts, 1))
    title = _TITLE.search(text)
    return ParsedDocument(pages=pages, title=title.group(1).strip() if title else None)


def refuse_binary(source: RawSource, kind: str) -> None:
    """Refuse bytes that are plainly not text: a NUL near the start, or a PDF header.

    Readers that decode leniently (HTML, source code in Latin-1) would
    otherwise index a picture, an archive or a PDF named ``.html`` as garbage
    text.  A small PDF may hold no NUL at all, so its header is checked too.
    """
    head = source.content[:_BINARY_SNIFF]
    if b"\x00" in head:
        raise ParseError(source.filename, f"not {kind} (contains NUL bytes)")
    if head.startswith(b"%PDF-"):
        raise ParseError(source.filename, f"not {kind} (the bytes are a PDF)")
