"""Plain text and Markdown: read as-is, one page per form-feed-separated block."""

from __future__ import annotations

import re

from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.core.documents import RawSource
from ragsage.core.errors import ParseError
from ragsage.core.pages import Page, ParsedDocument

_TITLE = re.compile(r"^ {0,3}#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


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
