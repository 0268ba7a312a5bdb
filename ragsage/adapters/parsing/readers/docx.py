"""Word (DOCX) through python-docx: headings, paragraphs, lists and tables in body order."""

from __future__ import annotations

import io
import re
from typing import Any

from ragsage.adapters.parsing import markdown
from ragsage.adapters.parsing.limits import ParseLimits
from ragsage.adapters.parsing.readers.office import check_container
from ragsage.core.documents import RawSource
from ragsage.core.errors import ParseError
from ragsage.core.pages import Page, ParsedDocument

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def read_docx(source: RawSource, limits: ParseLimits) -> ParsedDocument:
    """One page of Markdown for the whole document (Word has no fixed page grid)."""
    check_container(source.content, source.filename, "DOCX", "word/document.xml", limits)
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(source.content))
        blocks: list[tuple[str, str]] = []
        for item in document.iter_inner_content():
            if isinstance(item, Table):
                blocks.append(("table", _table(item)))
            else:
                blocks.append(_paragraph(item))
        title = (document.core_properties.title or "").strip() or None
    except ParseError:
        raise
    except Exception as exc:  # python-docx raises bare KeyError/ValueError/lxml errors
        raise ParseError(source.filename, f"not a readable DOCX file ({exc})") from exc
    if title is None:
        title = next((text[2:] for kind, text in blocks if kind == "title"), None)
    return ParsedDocument(pages=(Page(number=1, text=_join(blocks)),), title=title)


def _paragraph(paragraph: Any) -> tuple[str, str]:
    text = markdown.inline(paragraph.text)
    if not text:
        return "empty", ""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":
        return "title", markdown.heading(1, text)
    found = _HEADING_STYLE.match(style)
    if found:
        # Title is level 1, so Word's Heading 1 nests under it.
        return "heading", markdown.heading(int(found.group(1)) + 1, text)
    if "List" in style or paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None:
        return "item", f"- {text}"
    return "paragraph", text


def _table(table: Any) -> str:
    return markdown.table([[cell.text for cell in row.cells] for row in table.rows])


def _join(blocks: list[tuple[str, str]]) -> str:
    """Blocks separated by blank lines, except consecutive list items, which form one list."""
    out: list[str] = []
    previous = ""
    for kind, text in blocks:
        if not text:
            continue
        if kind == "item" and previous == "item":
            out[-1] += "\n" + text
        else:
            out.append(text)
        previous = kind
    return "\n\n".join(out)
